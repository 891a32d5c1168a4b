//! `resource.k8s.io/v1` objects: DeviceClass, ResourceSlice, ResourceClaim and
//! ResourceClaimTemplate, decoded strictly like Nodes and Pods, with the API server's v1
//! defaulting (`exactly.allocationMode: ExactCount` and `count: 1` when absent, also
//! for `firstAvailable` subrequests; toleration `operator: Equal`; namespace
//! `default`), and every CEL selector compiled when the scenario loads: an expression
//! that does not compile is one line naming the file, the object and the field.
//!
//! Other versions of the group (`v1beta1`, `v1beta2`) are not read: a warning says so.

use std::collections::HashSet;
use std::sync::Arc;

use k8s_openapi::api::resource::v1::{
    CapacityRequirements, Device, DeviceClaim, DeviceClass, DeviceSelector, DeviceToleration,
    ExactDeviceRequest, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};
use kubesched_plugins::dynamic_resources::cel;
use serde_json::Value;

use super::decode::decode;
use super::validate::raw_str;
use super::{Builder, Origin, ScenarioError};

/// The DRA objects of a scenario, in file order.
#[derive(Clone, Debug, Default)]
pub struct DraObjects {
    /// DeviceClasses (cluster-scoped).
    pub device_classes: Vec<Arc<DeviceClass>>,
    /// ResourceSlices (cluster-scoped); their order is the order the allocator walks
    /// pools and slices in.
    pub slices: Vec<Arc<ResourceSlice>>,
    /// ResourceClaims, with `metadata.namespace` set.
    pub claims: Vec<Arc<ResourceClaim>>,
    /// ResourceClaimTemplates, with `metadata.namespace` set.
    pub templates: Vec<Arc<ResourceClaimTemplate>>,
}

/// The DRA kinds kubesched reads.
pub(super) fn is_dra_kind(kind: &str) -> bool {
    matches!(
        kind,
        "DeviceClass" | "ResourceSlice" | "ResourceClaim" | "ResourceClaimTemplate"
    )
}

fn namespaced(kind: &str) -> bool {
    matches!(kind, "ResourceClaim" | "ResourceClaimTemplate")
}

impl Builder {
    /// Reads a `resource.k8s.io` object; `false` when its version is not `v1` (the
    /// caller keeps it as an other object, with a warning).
    pub(super) fn add_dra(
        &mut self,
        origin: &Origin<'_>,
        value: &Value,
        api_version: &str,
        kind: &str,
    ) -> Result<bool, ScenarioError> {
        let name = raw_str(value, "/metadata/name");
        if api_version != "resource.k8s.io/v1" {
            self.scenario.warnings.push(format!(
                "{}: {kind} {}: apiVersion: {api_version:?} is not read; kubesched reads resource.k8s.io/v1 (kubectl get {} -o yaml prints it)",
                origin.document(),
                name.unwrap_or(""),
                kind.to_lowercase()
            ));
            return Ok(false);
        }
        let namespace = raw_str(value, "/metadata/namespace").unwrap_or("default");
        let Some(name) = name else {
            return Err(ScenarioError::MissingName {
                document: origin.document(),
                kind: kind.to_owned(),
            });
        };
        let file = origin.file.to_owned();
        let object = if namespaced(kind) {
            format!("{kind} {namespace}/{name}")
        } else {
            format!("{kind} {name}")
        };
        let key = format!("{kind} {namespace}/{name}");
        if !self.dra_names.insert(key) {
            return Err(ScenarioError::Decode {
                file,
                object,
                field: "metadata.name".into(),
                message: "duplicate name".into(),
            });
        }
        let invalid = |field: String, message: String| ScenarioError::Decode {
            file: file.clone(),
            object: object.clone(),
            field,
            message,
        };
        let dra = &mut self.scenario.dra;
        match kind {
            "DeviceClass" => {
                let class: DeviceClass = decode(value, &file, &object)?;
                let selectors = class.spec.as_ref().and_then(|s| s.selectors.as_ref());
                check_selectors(selectors, "spec.selectors", &invalid)?;
                let extended = class
                    .spec
                    .as_ref()
                    .and_then(|s| s.extended_resource_name.as_deref());
                if let Some(name) = extended
                    && !kubesched_framework::resource::is_extended_resource_name(name)
                {
                    // The API server's validateDeviceClass refuses such a class.
                    return Err(invalid(
                        "spec.extendedResourceName".into(),
                        format!(
                            "Invalid value: {name:?}: must be an extended resource name: a qualified name with a domain outside kubernetes.io (such as example.com/gpu), not starting with \"requests.\""
                        ),
                    ));
                }
                dra.device_classes.push(Arc::new(class));
            }
            "ResourceSlice" => {
                let slice: ResourceSlice = decode(value, &file, &object)?;
                if slice.spec.driver.is_empty() {
                    return Err(invalid("spec.driver".into(), "missing".into()));
                }
                if slice.spec.pool.name.is_empty() {
                    return Err(invalid("spec.pool.name".into(), "missing".into()));
                }
                let mut devices = HashSet::new();
                for (i, d) in slice.spec.devices.iter().flatten().enumerate() {
                    if !devices.insert(d.name.as_str()) {
                        return Err(invalid(
                            format!("spec.devices[{i}].name"),
                            format!("duplicate device name {:?}", d.name),
                        ));
                    }
                    check_device(d, &format!("spec.devices[{i}]"), &invalid)?;
                }
                check_counter_sets(&slice, &invalid)?;
                dra.slices.push(Arc::new(slice));
            }
            "ResourceClaim" => {
                let mut claim: ResourceClaim = decode(value, &file, &object)?;
                claim.metadata.namespace = Some(namespace.to_owned());
                if let Some(devices) = claim.spec.as_mut().and_then(|s| s.devices.as_mut()) {
                    default_devices(devices);
                    check_devices(devices, "spec.devices", &invalid)?;
                }
                dra.claims.push(Arc::new(claim));
                self.dra_claim_files.push(file.clone());
            }
            _ => {
                let mut template: ResourceClaimTemplate = decode(value, &file, &object)?;
                template.metadata.namespace = Some(namespace.to_owned());
                if let Some(devices) = template
                    .spec
                    .as_mut()
                    .and_then(|t| t.spec.as_mut())
                    .and_then(|s| s.devices.as_mut())
                {
                    default_devices(devices);
                    check_devices(devices, "spec.spec.devices", &invalid)?;
                }
                dra.templates.push(Arc::new(template));
            }
        }
        Ok(true)
    }

    /// Warnings once every object is read: claims naming a DeviceClass the scenario
    /// does not have (kube-scheduler reports them when such a pod is scheduled).
    pub(super) fn finish_dra(&mut self) {
        let classes: HashSet<&str> = self
            .scenario
            .dra
            .device_classes
            .iter()
            .filter_map(|c| c.metadata.name.as_deref())
            .collect();
        let mut warnings = Vec::new();
        for (claim, file) in self.scenario.dra.claims.iter().zip(&self.dra_claim_files) {
            let requests = claim
                .spec
                .as_ref()
                .and_then(|s| s.devices.as_ref())
                .and_then(|d| d.requests.as_ref());
            for (i, r) in requests.into_iter().flatten().enumerate() {
                let names = r
                    .exactly
                    .iter()
                    .map(|e| e.device_class_name.as_str())
                    .chain(
                        r.first_available
                            .iter()
                            .flatten()
                            .map(|s| s.device_class_name.as_str()),
                    );
                for class in names {
                    if !classes.contains(class) {
                        warnings.push(format!(
                            "{file}: ResourceClaim {}/{}: spec.devices.requests[{i}]: device class {class:?} is not in the scenario; pods using the claim cannot be scheduled",
                            claim.metadata.namespace.as_deref().unwrap_or_default(),
                            claim.metadata.name.as_deref().unwrap_or_default(),
                        ));
                    }
                }
            }
        }
        self.scenario.warnings.extend(warnings);
    }
}

/// The API server's v1 defaults of a claim's requests.
fn default_devices(devices: &mut DeviceClaim) {
    for request in devices.requests.iter_mut().flatten() {
        if let Some(exactly) = request.exactly.as_mut() {
            default_exact(exactly);
        }
        for sub in request.first_available.iter_mut().flatten() {
            default_mode(&mut sub.allocation_mode, &mut sub.count);
            default_tolerations(sub.tolerations.as_mut());
        }
    }
}

fn default_exact(e: &mut ExactDeviceRequest) {
    default_mode(&mut e.allocation_mode, &mut e.count);
    default_tolerations(e.tolerations.as_mut());
}

fn default_mode(mode: &mut Option<String>, count: &mut Option<i64>) {
    if mode.as_deref().unwrap_or_default().is_empty() {
        *mode = Some("ExactCount".to_owned());
    }
    if mode.as_deref() == Some("ExactCount") && count.is_none() {
        *count = Some(1);
    }
}

fn default_tolerations(tolerations: Option<&mut Vec<DeviceToleration>>) {
    for t in tolerations.into_iter().flatten() {
        if t.operator.as_deref().unwrap_or_default().is_empty() {
            t.operator = Some("Equal".to_owned());
        }
    }
}

fn check_devices(
    devices: &DeviceClaim,
    path: &str,
    invalid: &dyn Fn(String, String) -> ScenarioError,
) -> Result<(), ScenarioError> {
    for (i, r) in devices.requests.iter().flatten().enumerate() {
        let at = format!("{path}.requests[{i}]");
        match (&r.exactly, &r.first_available) {
            (Some(e), None) => {
                check_capacity_requests(e.capacity.as_ref(), &format!("{at}.exactly"), invalid)?;
                check_selectors(
                    e.selectors.as_ref(),
                    &format!("{at}.exactly.selectors"),
                    invalid,
                )?;
                check_mode(
                    e.allocation_mode.as_deref(),
                    &format!("{at}.exactly"),
                    invalid,
                )?;
            }
            (None, Some(subs)) if !subs.is_empty() => {
                for (j, s) in subs.iter().enumerate() {
                    let sub = format!("{at}.firstAvailable[{j}]");
                    check_capacity_requests(s.capacity.as_ref(), &sub, invalid)?;
                    check_selectors(s.selectors.as_ref(), &format!("{sub}.selectors"), invalid)?;
                    check_mode(s.allocation_mode.as_deref(), &sub, invalid)?;
                }
            }
            _ => {
                return Err(invalid(
                    at,
                    "exactly one of exactly and firstAvailable must be set".into(),
                ));
            }
        }
    }
    for (i, c) in devices.constraints.iter().flatten().enumerate() {
        if c.match_attribute.as_deref().unwrap_or_default().is_empty() {
            return Err(invalid(
                format!("{path}.constraints[{i}].matchAttribute"),
                "missing (the only constraint kubesched knows)".into(),
            ));
        }
    }
    Ok(())
}

type Invalid<'a> = &'a dyn Fn(String, String) -> ScenarioError;

fn quantity(q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity) -> i128 {
    // Quantities are checked when the object is decoded.
    kubesched_framework::quantity::Quantity::parse(&q.0).map_or(0, |q| q.milli())
}

/// A request's `capacity.requests` (DRAConsumableCapacity): amounts are not negative.
fn check_capacity_requests(
    capacity: Option<&CapacityRequirements>,
    at: &str,
    invalid: Invalid<'_>,
) -> Result<(), ScenarioError> {
    for (name, q) in capacity
        .and_then(|c| c.requests.as_ref())
        .into_iter()
        .flatten()
    {
        if quantity(q) < 0 {
            return Err(invalid(
                format!("{at}.capacity.requests.{name}"),
                format!("{:?} must not be negative", q.0),
            ));
        }
    }
    Ok(())
}

/// A device's capacities, counter consumption and binding conditions, as the API
/// server validates them.
fn check_device(d: &Device, at: &str, invalid: Invalid<'_>) -> Result<(), ScenarioError> {
    for (name, c) in d.capacity.iter().flatten() {
        let Some(policy) = &c.request_policy else {
            continue;
        };
        let field = format!("{at}.capacity.{name}.requestPolicy");
        let value = quantity(&c.value);
        match (&policy.valid_values, &policy.valid_range) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    field,
                    "validValues and validRange are mutually exclusive".into(),
                ));
            }
            (Some(values), None) => {
                let v: Vec<i128> = values.iter().map(quantity).collect();
                if v.windows(2).any(|w| w[0] >= w[1]) {
                    return Err(invalid(
                        format!("{field}.validValues"),
                        "must be sorted in ascending order without duplicates".into(),
                    ));
                }
                if v.last().is_some_and(|&last| last > value) {
                    return Err(invalid(
                        format!("{field}.validValues"),
                        format!("must not exceed the capacity's value {:?}", c.value.0),
                    ));
                }
                if let Some(d) = &policy.default
                    && !v.contains(&quantity(d))
                {
                    return Err(invalid(
                        format!("{field}.default"),
                        format!("{:?} is not one of validValues", d.0),
                    ));
                }
            }
            (None, Some(range)) => {
                let min = quantity(&range.min);
                let max = range.max.as_ref().map(quantity);
                if min < 0 || min > value {
                    return Err(invalid(
                        format!("{field}.validRange.min"),
                        format!(
                            "{:?} must be between 0 and the capacity's value {:?}",
                            range.min.0, c.value.0
                        ),
                    ));
                }
                if let Some(m) = max
                    && (m < min || m > value)
                {
                    return Err(invalid(
                        format!("{field}.validRange.max"),
                        "must be at least min and at most the capacity's value".into(),
                    ));
                }
                if let Some(step) = &range.step
                    && quantity(step) <= 0
                {
                    return Err(invalid(
                        format!("{field}.validRange.step"),
                        format!("{:?} must be positive", step.0),
                    ));
                }
                if let Some(d) = &policy.default {
                    let dv = quantity(d);
                    if dv < min || max.is_some_and(|m| dv > m) || dv > value {
                        return Err(invalid(
                            format!("{field}.default"),
                            format!("{:?} is outside validRange", d.0),
                        ));
                    }
                }
            }
            (None, None) => {}
        }
    }
    for (j, c) in d.consumes_counters.iter().flatten().enumerate() {
        if c.counter_set.is_empty() {
            return Err(invalid(
                format!("{at}.consumesCounters[{j}].counterSet"),
                "missing".into(),
            ));
        }
        if c.counters.is_empty() {
            return Err(invalid(
                format!("{at}.consumesCounters[{j}].counters"),
                "must name at least one counter".into(),
            ));
        }
    }
    let conditions = d.binding_conditions.as_ref().map_or(0, Vec::len);
    let failures = d.binding_failure_conditions.as_ref().map_or(0, Vec::len);
    if conditions > 4 || failures > 4 {
        return Err(invalid(
            format!("{at}.bindingConditions"),
            "at most 4 binding conditions and 4 binding failure conditions".into(),
        ));
    }
    Ok(())
}

/// A slice's shared counter sets: named, unique, with counters; and what its devices
/// consume exists in the slice's own sets when it has any (sets in another slice of
/// the pool are checked by the allocator, which treats the pool as invalid).
fn check_counter_sets(slice: &ResourceSlice, invalid: Invalid<'_>) -> Result<(), ScenarioError> {
    let mut names = HashSet::new();
    for (i, set) in slice.spec.shared_counters.iter().flatten().enumerate() {
        if set.name.is_empty() {
            return Err(invalid(
                format!("spec.sharedCounters[{i}].name"),
                "missing".into(),
            ));
        }
        if !names.insert(set.name.as_str()) {
            return Err(invalid(
                format!("spec.sharedCounters[{i}].name"),
                format!("duplicate counter set {:?}", set.name),
            ));
        }
        if set.counters.is_empty() {
            return Err(invalid(
                format!("spec.sharedCounters[{i}].counters"),
                "must define at least one counter".into(),
            ));
        }
        for (name, c) in &set.counters {
            if quantity(&c.value) < 0 {
                return Err(invalid(
                    format!("spec.sharedCounters[{i}].counters.{name}.value"),
                    format!("{:?} must not be negative", c.value.0),
                ));
            }
        }
    }
    Ok(())
}

fn check_mode(
    mode: Option<&str>,
    at: &str,
    invalid: &dyn Fn(String, String) -> ScenarioError,
) -> Result<(), ScenarioError> {
    match mode {
        Some("ExactCount" | "All") | None => Ok(()),
        Some(other) => Err(invalid(
            format!("{at}.allocationMode"),
            format!("unsupported value {other:?}: must be ExactCount or All"),
        )),
    }
}

fn check_selectors(
    selectors: Option<&Vec<DeviceSelector>>,
    path: &str,
    invalid: &dyn Fn(String, String) -> ScenarioError,
) -> Result<(), ScenarioError> {
    for (i, s) in selectors.into_iter().flatten().enumerate() {
        let Some(expr) = s.cel.as_ref().map(|c| c.expression.as_str()) else {
            return Err(invalid(format!("{path}[{i}].cel"), "missing".into()));
        };
        cel::compile(expr).map_err(|e| invalid(format!("{path}[{i}].cel.expression"), e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::scenario::{Source, load};

    fn source(text: &str) -> Vec<Source> {
        vec![Source {
            name: "x.yaml".into(),
            text: text.into(),
        }]
    }

    const CLASS: &str = "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: gpu\nspec:\n  selectors:\n  - cel:\n      expression: device.driver == \"gpu\"\n";

    #[test]
    fn claims_get_the_api_servers_v1_defaults() {
        let text = format!(
            "{CLASS}---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: c\nspec:\n  devices:\n    requests:\n    - name: a\n      exactly:\n        deviceClassName: gpu\n        tolerations:\n        - key: k\n    - name: b\n      firstAvailable:\n      - name: one\n        deviceClassName: gpu\n      - name: all\n        deviceClassName: gpu\n        allocationMode: All\n"
        );
        let s = load(&source(&text)).unwrap();
        let claim = &s.dra.claims[0];
        assert_eq!(claim.metadata.namespace.as_deref(), Some("default"));
        let requests = claim
            .spec
            .as_ref()
            .unwrap()
            .devices
            .as_ref()
            .unwrap()
            .requests
            .as_ref()
            .unwrap();
        let a = requests[0].exactly.as_ref().unwrap();
        assert_eq!(a.allocation_mode.as_deref(), Some("ExactCount"));
        assert_eq!(a.count, Some(1));
        assert_eq!(
            a.tolerations.as_ref().unwrap()[0].operator.as_deref(),
            Some("Equal")
        );
        let subs = requests[1].first_available.as_ref().unwrap();
        assert_eq!(
            (subs[0].allocation_mode.as_deref(), subs[0].count),
            (Some("ExactCount"), Some(1))
        );
        assert_eq!(
            (subs[1].allocation_mode.as_deref(), subs[1].count),
            (Some("All"), None)
        );
        assert_eq!(s.dra.device_classes.len(), 1);
    }

    #[test]
    fn a_selector_that_does_not_compile_is_one_line_naming_file_object_and_field() {
        let text = "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: c\n  namespace: ml\nspec:\n  devices:\n    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: gpu\n        selectors:\n        - cel:\n            expression: device.capacity[\"gpu\"].memory >=\n";
        let e = load(&source(text)).unwrap_err().to_string();
        assert!(
            e.starts_with("x.yaml: ResourceClaim ml/c: spec.devices.requests[0].exactly.selectors[0].cel.expression: compilation failed"),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1, "{e}");
        let class = CLASS.replace("device.driver == \"gpu\"", "gpu.driver == \"gpu\"");
        let e = load(&source(&class)).unwrap_err().to_string();
        assert!(e.starts_with("x.yaml: DeviceClass gpu: spec.selectors[0].cel.expression: compilation failed: undeclared reference to 'gpu'"), "{e}");
    }

    #[test]
    fn a_device_class_extended_resource_name_must_be_one() {
        let with = |name: &str| {
            CLASS.replace(
                "spec:\n",
                &format!("spec:\n  extendedResourceName: {name}\n"),
            )
        };
        let loaded = load(&source(&with("example.com/gpu"))).unwrap();
        let spec = loaded.dra.device_classes[0].spec.as_ref().unwrap();
        assert_eq!(
            spec.extended_resource_name.as_deref(),
            Some("example.com/gpu")
        );
        for bad in [
            "cpu",
            "kubernetes.io/gpu",
            "\"requests.example.com/gpu\"",
            "gpu",
        ] {
            let e = load(&source(&with(bad))).unwrap_err().to_string();
            assert!(
                e.starts_with(
                    "x.yaml: DeviceClass gpu: spec.extendedResourceName: Invalid value: "
                ),
                "{bad}: {e}"
            );
            assert_eq!(e.lines().count(), 1, "{e}");
        }
        let e = load(&source(&with("[a]"))).unwrap_err().to_string();
        assert!(
            e.starts_with("x.yaml: DeviceClass gpu: spec.extendedResourceName"),
            "{e}"
        );
    }

    #[test]
    fn bad_slices_and_quantities_are_errors() {
        let slice = |devices: &str| {
            format!(
                "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: s\nspec:\n  driver: gpu\n  nodeName: n1\n  pool:\n    name: p\n    generation: 1\n    resourceSliceCount: 1\n  devices:\n{devices}"
            )
        };
        let e = load(&source(&slice(
            "  - name: a\n    capacity:\n      memory:\n        value: 40Gx\n",
        )))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(
                "ResourceSlice s: spec.devices[0].capacity.memory.value: invalid quantity \"40Gx\""
            ),
            "{e}"
        );
        let e = load(&source(&slice("  - name: a\n  - name: a\n")))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ResourceSlice s: spec.devices[1].name: duplicate device name"),
            "{e}"
        );
        let no_driver = slice("  - name: a\n").replace("  driver: gpu\n", "");
        let e = load(&source(&no_driver)).unwrap_err().to_string();
        assert!(e.starts_with("x.yaml: ResourceSlice s: spec"), "{e}");
    }

    #[test]
    fn bad_counters_capacity_policies_and_binding_conditions_are_one_line_errors_naming_the_field()
    {
        let slice = |body: &str| {
            format!(
                "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: s\nspec:\n  driver: gpu\n  nodeName: n1\n  pool:\n    name: p\n    generation: 1\n    resourceSliceCount: 1\n{body}"
            )
        };
        let cases = [
            (
                "  sharedCounters:\n  - name: a\n    counters: {m: {value: 1}}\n  - name: a\n    counters: {m: {value: 1}}\n",
                "ResourceSlice s: spec.sharedCounters[1].name: duplicate counter set \"a\"",
            ),
            (
                "  devices:\n  - name: d\n    consumesCounters: [{counterSet: a, counters: {}}]\n",
                "ResourceSlice s: spec.devices[0].consumesCounters[0].counters: must name at least one counter",
            ),
            (
                "  devices:\n  - name: d\n    capacity:\n      bw:\n        value: 4Gi\n        requestPolicy: {validValues: [2Gi, 1Gi]}\n",
                "ResourceSlice s: spec.devices[0].capacity.bw.requestPolicy.validValues: must be sorted",
            ),
            (
                "  devices:\n  - name: d\n    capacity:\n      bw:\n        value: 4Gi\n        requestPolicy: {default: 5Gi, validRange: {min: 1Gi}}\n",
                "ResourceSlice s: spec.devices[0].capacity.bw.requestPolicy.default: \"5Gi\" is outside validRange",
            ),
            (
                "  devices:\n  - name: d\n    bindingConditions: [a, b, c, d, e]\n    bindingFailureConditions: [f]\n",
                "ResourceSlice s: spec.devices[0].bindingConditions: at most 4 binding conditions",
            ),
        ];
        for (body, want) in cases {
            let e = load(&source(&slice(body))).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
        let claim = "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: c\nspec:\n  devices:\n    requests:\n    - name: r\n      exactly:\n        deviceClassName: gpu\n        capacity: {requests: {bw: \"-1\"}}\n";
        let e = load(&source(claim)).unwrap_err().to_string();
        assert!(
            e.contains("ResourceClaim default/c: spec.devices.requests[0].exactly.capacity.requests.bw: \"-1\" must not be negative"),
            "{e}"
        );
    }

    #[test]
    fn other_versions_and_missing_classes_are_warned_about() {
        let text = "apiVersion: resource.k8s.io/v1beta1\nkind: ResourceClaim\nmetadata:\n  name: old\n---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: c\nspec:\n  devices:\n    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: nosuch\n";
        let s = load(&source(text)).unwrap();
        assert_eq!(s.dra.claims.len(), 1);
        assert!(
            s.warnings
                .iter()
                .any(|w| w.contains("\"resource.k8s.io/v1beta1\" is not read")),
            "{:?}",
            s.warnings
        );
        assert!(
            s.warnings
                .iter()
                .any(|w| w.contains("device class \"nosuch\" is not in the scenario")),
            "{:?}",
            s.warnings
        );
    }
}
