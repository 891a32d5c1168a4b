//! CEL device selectors, evaluated with the `cel` crate (cel-rust) and the part of
//! Kubernetes' CEL library that DRA selectors use.
//!
//! A selector sees one variable, `device`, as kube-scheduler's
//! `k8s.io/dynamic-resource-allocation/cel` builds it:
//!
//! - `device.driver`: the driver's name;
//! - `device.attributes["DOMAIN"].NAME`: attributes by domain (an attribute written
//!   without a domain belongs to the driver's); values are `int`, `bool`, `string` or a
//!   semantic version;
//! - `device.capacity["DOMAIN"].NAME`: capacities as quantities.
//!
//! Kubernetes' library functions: `quantity("60Gi")`, `isQuantity(s)`, and on
//! quantities `compareTo`, `isLessThan`, `isGreaterThan`, `add`, `sub`, `asInteger`,
//! `isInteger`, `asApproximateFloat`, `sign`; `semver("1.2.3")`, `isSemver(s)`, and on
//! versions `compareTo`, `isLessThan`, `isGreaterThan`, `major`, `minor`, `patch`.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use cel::extractors::This;
use cel::objects::{Key, Map, Opaque};
use cel::{Context, Env, ExecutionError, Program, Value};
use k8s_openapi::api::resource::v1::{Device, DeviceAttribute};
use kubesched_framework::quantity::Quantity;

/// The only variable a selector may use.
const DEVICE: &str = "device";

/// A quantity as a CEL value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CelQuantity(Quantity);

impl Opaque for CelQuantity {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

/// A semantic version as a CEL value.
#[derive(Clone, Debug, PartialEq, Eq)]
struct CelSemver(semver::Version);

impl Opaque for CelSemver {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Semver"
    }
}

impl CelSemver {
    /// SemVer 2.0 precedence: build metadata does not count.
    fn cmp(&self, other: &CelSemver) -> std::cmp::Ordering {
        let (a, b) = (&self.0, &other.0);
        (a.major, a.minor, a.patch, &a.pre).cmp(&(b.major, b.minor, b.patch, &b.pre))
    }
}

/// A device's place in the DRA state: (slice index, device index).
pub type DeviceKey = (usize, usize);

/// A compiled selector expression, with the results it gave for each device: devices
/// never change during a run, so each is evaluated once per expression.
#[derive(Clone)]
pub struct Selector {
    program: Arc<Program>,
    /// The domains the expression names as `attributes["D"]` or `capacity["D"]`.
    domains: Arc<[(&'static str, String)]>,
    results: Arc<RwLock<HashMap<DeviceKey, Result<bool, String>>>>,
}

impl fmt::Debug for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Selector")
    }
}

fn env() -> Env {
    Env::stdlib()
}

/// Compiles a selector: a syntax error or a variable other than `device` is an error,
/// as kube-scheduler's compiler reports it before any device is looked at. (cel-rust
/// does not type-check, so a call of an unknown function is found when it runs.)
pub fn compile(expression: &str) -> Result<Selector, String> {
    let env = env();
    let program = env.compile(expression).map_err(|e| {
        let text = e.to_string();
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        format!("compilation failed: {}", first.trim())
    })?;
    let references = program.references();
    if let Some(v) = references.variables().into_iter().find(|v| *v != DEVICE) {
        return Err(format!(
            "compilation failed: undeclared reference to '{v}' (the only variable is 'device')"
        ));
    }
    Ok(Selector {
        program: Arc::new(program),
        domains: named_domains(expression).into(),
        results: Arc::default(),
    })
}

/// The `(field, domain)` pairs an expression indexes with a string literal, as in
/// `device.attributes["gpu.example.com"]`. Kubernetes' `device.attributes` and
/// `device.capacity` give an empty map for a domain the device has nothing in (the
/// error is then the missing name, not the domain), which a plain CEL map does not:
/// [`DeviceValue::with_domains`] adds those empty maps.
fn named_domains(expression: &str) -> Vec<(&'static str, String)> {
    let mut found = Vec::new();
    for field in ["attributes", "capacity"] {
        let mut rest = expression;
        while let Some(at) = rest.find(field) {
            rest = &rest[at + field.len()..];
            let tail = rest.trim_start();
            let Some(tail) = tail.strip_prefix('[') else {
                continue;
            };
            let tail = tail.trim_start();
            let Some(quote) = tail.chars().next().filter(|c| *c == '"' || *c == '\'') else {
                continue;
            };
            let literal = &tail[1..];
            if let Some(end) = literal.find(quote) {
                let domain = literal[..end].to_owned();
                if !found.iter().any(|(f, d)| *f == field && *d == domain) {
                    found.push((field, domain));
                }
            }
        }
    }
    found
}

/// A device as a selector sees it, built once per device.
#[derive(Clone, Debug)]
pub struct DeviceValue(Value);

impl DeviceValue {
    /// The `device` variable for a device of `driver`.
    pub fn new(driver: &str, device: &Device) -> DeviceValue {
        let mut attributes: HashMap<String, HashMap<Key, Value>> = HashMap::new();
        for (name, attribute) in device.attributes.iter().flatten() {
            let (domain, id) = qualify(driver, name);
            if let Some(value) = attribute_value(attribute) {
                attributes
                    .entry(domain.to_owned())
                    .or_default()
                    .insert(Key::from(id.to_owned()), value);
            }
        }
        let mut capacity: HashMap<String, HashMap<Key, Value>> = HashMap::new();
        for (name, cap) in device.capacity.iter().flatten() {
            let (domain, id) = qualify(driver, name);
            if let Ok(q) = Quantity::parse(&cap.value.0) {
                capacity.entry(domain.to_owned()).or_default().insert(
                    Key::from(id.to_owned()),
                    Value::Opaque(Arc::new(CelQuantity(q))),
                );
            }
        }
        let nested = |m: HashMap<String, HashMap<Key, Value>>| -> Value {
            let inner: HashMap<Key, Value> = m
                .into_iter()
                .map(|(k, v)| (Key::from(k), Value::Map(Map::from(v))))
                .collect();
            Value::Map(Map::from(inner))
        };
        let mut fields: HashMap<Key, Value> = HashMap::new();
        fields.insert(
            Key::from("driver"),
            Value::String(Arc::new(driver.to_owned())),
        );
        fields.insert(Key::from("attributes"), nested(attributes));
        fields.insert(Key::from("capacity"), nested(capacity));
        fields.insert(
            Key::from("allowMultipleAllocations"),
            Value::Bool(device.allow_multiple_allocations.unwrap_or(false)),
        );
        DeviceValue(Value::Map(Map::from(fields)))
    }
}

impl DeviceValue {
    /// The device with an empty map for each of `domains` it has nothing in, or `None`
    /// when it lacks none (the usual case: no copy).
    fn with_domains(&self, domains: &[(&'static str, String)]) -> Option<DeviceValue> {
        let Value::Map(fields) = &self.0 else {
            return None;
        };
        let lacks = |field: &str, domain: &str| match fields.map.get(&Key::from(field)) {
            Some(Value::Map(m)) => !m.map.contains_key(&Key::from(domain.to_owned())),
            _ => false,
        };
        if !domains.iter().any(|(f, d)| lacks(f, d)) {
            return None;
        }
        let mut completed: HashMap<Key, Value> = (*fields.map).clone();
        for (field, domain) in domains {
            if let Some(Value::Map(m)) = completed.get(&Key::from(*field))
                && !m.map.contains_key(&Key::from(domain.clone()))
            {
                let mut inner: HashMap<Key, Value> = (*m.map).clone();
                inner.insert(
                    Key::from(domain.clone()),
                    Value::Map(Map::from(HashMap::<Key, Value>::new())),
                );
                completed.insert(Key::from(*field), Value::Map(Map::from(inner)));
            }
        }
        Some(DeviceValue(Value::Map(Map::from(completed))))
    }
}

/// `domain/id` → (domain, id); a name without a domain is the driver's.
fn qualify<'a>(driver: &'a str, name: &'a str) -> (&'a str, &'a str) {
    match name.split_once('/') {
        Some((domain, id)) => (domain, id),
        None => (driver, name),
    }
}

fn attribute_value(a: &DeviceAttribute) -> Option<Value> {
    if let Some(v) = a.int {
        Some(Value::Int(v))
    } else if let Some(v) = a.bool {
        Some(Value::Bool(v))
    } else if let Some(v) = &a.string {
        Some(Value::String(Arc::new(v.clone())))
    } else if let Some(v) = &a.version {
        semver::Version::parse(v)
            .ok()
            .map(|v| Value::Opaque(Arc::new(CelSemver(v))))
    } else {
        None
    }
}

impl Selector {
    /// [`Selector::matches`] for the device at `key`, evaluated once and remembered.
    pub fn matches_device(
        &self,
        context: &Context<'_, '_>,
        key: DeviceKey,
        device: &DeviceValue,
    ) -> Result<bool, String> {
        if let Some(r) = self
            .results
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return r.clone();
        }
        let r = self.matches(context, device);
        self.results
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, r.clone());
        r
    }

    /// Whether the device matches; `Err` is a CEL runtime error (a missing attribute, a
    /// type mismatch, a result that is not a bool).
    pub fn matches(&self, context: &Context<'_, '_>, device: &DeviceValue) -> Result<bool, String> {
        let mut scope = context.new_inner_scope();
        let value = match device.with_domains(&self.domains) {
            Some(completed) => completed.0,
            None => device.0.clone(),
        };
        scope.add_variable_from_value(DEVICE, value);
        match self.program.execute(&scope) {
            Ok(Value::Bool(b)) => Ok(b),
            Ok(other) => Err(format!("expression returned {other:?}, expected a bool")),
            Err(e) => Err(runtime_error(&e)),
        }
    }
}

/// A runtime error in cel-go's words where kube-scheduler's messages show them.
fn runtime_error(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::UndeclaredReference(name) => {
            format!("undeclared reference to '{name}'")
        }
        other => other.to_string(),
    }
}

fn quantity_of(v: &Value) -> Option<Quantity> {
    match v {
        Value::Opaque(o) => o.downcast_ref::<CelQuantity>().map(|q| q.0),
        _ => None,
    }
}

fn semver_of(v: &Value) -> Option<&CelSemver> {
    match v {
        Value::Opaque(o) => o.downcast_ref::<CelSemver>(),
        _ => None,
    }
}

fn compare(function: &str, a: &Value, b: &Value) -> Result<std::cmp::Ordering, ExecutionError> {
    if let (Some(x), Some(y)) = (quantity_of(a), quantity_of(b)) {
        return Ok(x.cmp(&y));
    }
    if let (Some(x), Some(y)) = (semver_of(a), semver_of(b)) {
        return Ok(x.cmp(y));
    }
    Err(ExecutionError::function_error(
        function,
        "needs two quantities or two semantic versions",
    ))
}

fn quantity_arg(function: &str, v: &Value) -> Result<Quantity, ExecutionError> {
    match v {
        Value::Int(i) => Ok(Quantity::from_value(*i)),
        _ => quantity_of(v)
            .ok_or_else(|| ExecutionError::function_error(function, "needs a quantity")),
    }
}

fn semver_arg<'v>(function: &str, v: &'v Value) -> Result<&'v semver::Version, ExecutionError> {
    semver_of(v)
        .map(|s| &s.0)
        .ok_or_else(|| ExecutionError::function_error(function, "needs a semantic version"))
}

fn string_arg<'v>(function: &str, v: &'v Value) -> Result<&'v str, ExecutionError> {
    match v {
        Value::String(s) => Ok(s.as_str()),
        _ => Err(ExecutionError::function_error(function, "needs a string")),
    }
}

fn quantity_value(q: Quantity) -> Value {
    Value::Opaque(Arc::new(CelQuantity(q)))
}

/// The root evaluation context: CEL's standard library and Kubernetes' quantity and
/// semver functions. Each evaluation adds `device` in an inner scope.
pub fn context() -> Context<'static, 'static> {
    let mut c = Context::with_env(Arc::new(env()));
    // The names are fixed and none is a standard overload (a unit test checks), so
    // adding them cannot fail.
    let register = |r: Result<(), cel::DeclarationError>| debug_assert!(r.is_ok());
    register(
        c.add_function("quantity", |s: Value| -> Result<Value, ExecutionError> {
            let s = string_arg("quantity", &s)?;
            Quantity::parse(s)
                .map(quantity_value)
                .map_err(|e| ExecutionError::function_error("quantity", e))
        }),
    );
    register(
        c.add_function("isQuantity", |s: Value| -> Result<Value, ExecutionError> {
            Ok(Value::Bool(
                Quantity::parse(string_arg("isQuantity", &s)?).is_ok(),
            ))
        }),
    );
    register(
        c.add_function("semver", |s: Value| -> Result<Value, ExecutionError> {
            let s = string_arg("semver", &s)?;
            semver::Version::parse(s)
                .map(|v| Value::Opaque(Arc::new(CelSemver(v))))
                .map_err(|e| ExecutionError::function_error("semver", e))
        }),
    );
    register(
        c.add_function("isSemver", |s: Value| -> Result<Value, ExecutionError> {
            Ok(Value::Bool(
                semver::Version::parse(string_arg("isSemver", &s)?).is_ok(),
            ))
        }),
    );
    register(c.add_function(
        "compareTo",
        |This(a): This<Value>, b: Value| -> Result<Value, ExecutionError> {
            Ok(Value::Int(compare("compareTo", &a, &b)? as i64))
        },
    ));
    register(c.add_function(
        "isLessThan",
        |This(a): This<Value>, b: Value| -> Result<Value, ExecutionError> {
            Ok(Value::Bool(compare("isLessThan", &a, &b)?.is_lt()))
        },
    ));
    register(c.add_function(
        "isGreaterThan",
        |This(a): This<Value>, b: Value| -> Result<Value, ExecutionError> {
            Ok(Value::Bool(compare("isGreaterThan", &a, &b)?.is_gt()))
        },
    ));
    register(c.add_function(
        "add",
        |This(a): This<Value>, b: Value| -> Result<Value, ExecutionError> {
            Ok(quantity_value(
                quantity_arg("add", &a)? + quantity_arg("add", &b)?,
            ))
        },
    ));
    register(c.add_function(
        "sub",
        |This(a): This<Value>, b: Value| -> Result<Value, ExecutionError> {
            let (a, b) = (quantity_arg("sub", &a)?, quantity_arg("sub", &b)?);
            Ok(quantity_value(Quantity::from_milli(a.milli() - b.milli())))
        },
    ));
    register(c.add_function(
        "asInteger",
        |This(a): This<Value>| -> Result<Value, ExecutionError> {
            let q = quantity_arg("asInteger", &a)?;
            if q.milli() % 1000 != 0 {
                return Err(ExecutionError::function_error(
                    "asInteger",
                    "cannot convert value to integer",
                ));
            }
            i64::try_from(q.milli() / 1000)
                .map(Value::Int)
                .map_err(|_| {
                    ExecutionError::function_error("asInteger", "cannot convert value to integer")
                })
        },
    ));
    register(c.add_function(
        "isInteger",
        |This(a): This<Value>| -> Result<Value, ExecutionError> {
            let q = quantity_arg("isInteger", &a)?;
            Ok(Value::Bool(
                q.milli() % 1000 == 0 && i64::try_from(q.milli() / 1000).is_ok(),
            ))
        },
    ));
    register(c.add_function(
        "asApproximateFloat",
        |This(a): This<Value>| -> Result<Value, ExecutionError> {
            Ok(Value::Float(
                quantity_arg("asApproximateFloat", &a)?.milli() as f64 / 1000.0,
            ))
        },
    ));
    register(c.add_function(
        "sign",
        |This(a): This<Value>| -> Result<Value, ExecutionError> {
            Ok(Value::Int(quantity_arg("sign", &a)?.milli().signum() as i64))
        },
    ));
    register(c.add_function(
        "major",
        |This(a): This<Value>| -> Result<Value, ExecutionError> {
            Ok(Value::Int(semver_arg("major", &a)?.major as i64))
        },
    ));
    register(c.add_function(
        "minor",
        |This(a): This<Value>| -> Result<Value, ExecutionError> {
            Ok(Value::Int(semver_arg("minor", &a)?.minor as i64))
        },
    ));
    register(c.add_function(
        "patch",
        |This(a): This<Value>| -> Result<Value, ExecutionError> {
            Ok(Value::Int(semver_arg("patch", &a)?.patch as i64))
        },
    ));
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The functions a selector may call besides CEL's standard ones.
    const LIBRARY: &[&str] = &[
        "quantity",
        "isQuantity",
        "semver",
        "isSemver",
        "compareTo",
        "isLessThan",
        "isGreaterThan",
        "add",
        "sub",
        "asInteger",
        "isInteger",
        "asApproximateFloat",
        "sign",
        "major",
        "minor",
        "patch",
    ];
    use k8s_openapi::api::resource::v1::DeviceCapacity;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;

    fn gpu(model: &str, memory: &str) -> Device {
        Device {
            name: "gpu-0".into(),
            attributes: Some(
                [
                    (
                        "model".to_string(),
                        DeviceAttribute {
                            string: Some(model.into()),
                            ..Default::default()
                        },
                    ),
                    (
                        "gpu.example.com/driverVersion".to_string(),
                        DeviceAttribute {
                            version: Some("1.2.3".into()),
                            ..Default::default()
                        },
                    ),
                ]
                .into(),
            ),
            capacity: Some(
                [(
                    "memory".to_string(),
                    DeviceCapacity {
                        value: ApiQuantity(memory.into()),
                        ..Default::default()
                    },
                )]
                .into(),
            ),
            ..Default::default()
        }
    }

    fn eval(expr: &str, device: &Device) -> Result<bool, String> {
        let ctx = context();
        compile(expr)?.matches(&ctx, &DeviceValue::new("gpu.example.com", device))
    }

    #[test]
    fn library_functions_are_not_standard_overloads() {
        for f in LIBRARY {
            let mut c = Context::with_env(Arc::new(env()));
            assert!(c.add_function(f, |a: i64| a).is_ok(), "{f}");
        }
    }

    #[test]
    fn a_domain_the_device_lacks_is_an_empty_map() {
        let d = gpu("h100", "80Gi");
        assert_eq!(
            eval(r#"device.attributes["nic.example.com"].speed == 1"#, &d),
            Err("no such key: speed".to_owned())
        );
        assert_eq!(
            eval(r#"!("speed" in device.attributes['nic.example.com'])"#, &d),
            Ok(true)
        );
        assert_eq!(
            eval(r#"size(device.capacity["nic.example.com"]) == 0"#, &d),
            Ok(true)
        );
        assert_eq!(
            named_domains(r#"device.attributes[ "a.io" ].x && device.capacity['b.io'].y"#),
            vec![
                ("attributes", "a.io".to_owned()),
                ("capacity", "b.io".to_owned())
            ]
        );
    }

    #[test]
    fn selectors_read_driver_attributes_and_capacity() {
        let d = gpu("h100", "80Gi");
        assert_eq!(eval(r#"device.driver == "gpu.example.com""#, &d), Ok(true));
        assert_eq!(
            eval(
                r#"device.attributes["gpu.example.com"].model == "h100""#,
                &d
            ),
            Ok(true)
        );
        assert_eq!(
            eval(
                r#"device.attributes["gpu.example.com"].model == "a100""#,
                &d
            ),
            Ok(false)
        );
        let big = r#"device.capacity["gpu.example.com"].memory.compareTo(quantity("60Gi")) >= 0"#;
        assert_eq!(eval(big, &d), Ok(true));
        assert_eq!(eval(big, &gpu("h100", "40Gi")), Ok(false));
        assert_eq!(
            eval(
                r#"device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("79Gi"))"#,
                &d
            ),
            Ok(true)
        );
        assert_eq!(
            eval(
                r#"device.attributes["gpu.example.com"].driverVersion.isLessThan(semver("1.10.0"))"#,
                &d
            ),
            Ok(true)
        );
        assert_eq!(
            eval(
                r#"device.attributes["gpu.example.com"].driverVersion.major() == 1"#,
                &d
            ),
            Ok(true)
        );
    }

    #[test]
    fn compile_errors_are_reported() {
        assert!(compile("device.driver ==").is_err());
        assert!(
            compile("other.driver == \"x\"")
                .unwrap_err()
                .contains("'other'")
        );
    }

    #[test]
    fn runtime_errors_are_errors() {
        let d = gpu("h100", "80Gi");
        assert!(eval(r#"device.attributes["gpu.example.com"].missing == 1"#, &d).is_err());
        assert!(eval(r#"device.driver"#, &d).is_err());
    }
}
