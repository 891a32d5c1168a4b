//! A small API server on loopback for tests and benchmarks: it speaks the Kubernetes
//! wire protocol (JSON) for exactly what kubesched uses — list and watch of pods and
//! nodes (and of Services, ReplicationControllers, ReplicaSets, StatefulSets,
//! Namespaces and PodDisruptionBudgets; and lists of the storage and
//! `resource.k8s.io/v1` kinds and of the gang and quota kinds, which can be made to
//! fail with 404 or 403, or their watch alone with 403) with
//! resourceVersions, the pod `binding` subresource (409 when the pod is
//! already bound), the pod `status` subresource (strategic merge of conditions and
//! `nominatedNodeName`), pod deletion,
//! `events.k8s.io/v1` events, and `coordination.k8s.io/v1` leases with optimistic
//! concurrency (409 on a stale resourceVersion); and the storage and DRA kinds, with
//! their updates and a PV controller the test plays (`storage`); binding requests
//! can be held until enough arrive together ([`FakeApiServer::hold_bindings_until`]). Lists honour `limit` and `continue`
//! (the continue token is the offset of the next item), and every request is recorded
//! ([`FakeApiServer::requests`]), so a test can check that a reader wrote nothing.
//!
//! ```no_run
//! # async fn demo() {
//! use kubesched_kube::testing::FakeApiServer;
//! let server = FakeApiServer::start().await;
//! server.add_node(FakeApiServer::node("n1", "4", "8Gi"));
//! let client = server.client();
//! # let _ = client;
//! # }
//! ```

/// One list-or-watch handler per resource (also used by the storage module).
macro_rules! list_handlers {
    ($($f:ident => $r:literal),*) => {$(
        async fn $f(
            State(fake): State<Arc<Fake>>,
            Query(q): Query<HashMap<String, String>>,
        ) -> Response {
            list_or_watch(fake, $r, q).await
        }
    )*};
}

mod scheduling;
mod storage;

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Container, Node, NodeStatus, Pod, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::{Value, json};
use tokio::sync::broadcast;

/// One change, as watchers see it.
#[derive(Clone, Debug)]
struct Change {
    rv: u64,
    resource: &'static str,
    type_: &'static str,
    object: Value,
}

#[derive(Default)]
struct Store {
    rv: u64,
    pods: BTreeMap<String, Value>,
    nodes: BTreeMap<String, Value>,
    /// Other listable kinds (services, replicasets, ...) by resource, then key.
    objects: BTreeMap<&'static str, BTreeMap<String, Value>>,
    leases: BTreeMap<String, Value>,
    events: Vec<Value>,
    bindings: Vec<(String, String)>,
    /// Pods deleted through the API (preemption victims), in order.
    deleted: Vec<String>,
    history: Vec<Change>,
    /// Pods that "another scheduler" binds to a node just before our binding lands.
    steal: HashMap<String, String>,
    /// Every request received, in order: (method, path with query).
    requests: Vec<(String, String)>,
    /// Watches from a resourceVersion below this are answered 410 Gone.
    compacted: u64,
    /// Resources whose list and watch are refused, with the status code.
    refused: HashMap<String, u16>,
    /// Resources whose watch alone is refused, with the status code.
    refused_watches: HashMap<String, u16>,
    /// Resources whose updates fail, with the status code.
    fail_writes: HashMap<&'static str, u16>,
}

struct Fake {
    store: Mutex<Store>,
    changes: broadcast::Sender<Change>,
    /// Holds binding requests back ([`FakeApiServer::hold_bindings_until`]).
    binding_gate: Mutex<Option<Arc<BindingGate>>>,
}

/// Binding requests wait here until `need` of them have arrived.
struct BindingGate {
    need: usize,
    arrived: std::sync::atomic::AtomicUsize,
    open: tokio::sync::watch::Sender<bool>,
}

impl Fake {
    fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Store {
    fn record(
        &mut self,
        tx: &broadcast::Sender<Change>,
        resource: &'static str,
        type_: &'static str,
        object: &mut Value,
    ) {
        self.rv += 1;
        object["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        let c = Change {
            rv: self.rv,
            resource,
            type_,
            object: object.clone(),
        };
        self.history.push(c.clone());
        let _ = tx.send(c);
    }
}

fn status(code: u16, reason: &str, message: String) -> Response {
    let body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code,
    });
    (
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        axum::Json(body),
    )
        .into_response()
}

fn key(ns: &str, name: &str) -> String {
    format!("{ns}/{name}")
}

/// The loopback API server. Dropping it stops it.
pub struct FakeApiServer {
    fake: Arc<Fake>,
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeApiServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl std::fmt::Debug for FakeApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeApiServer")
            .field("addr", &self.addr)
            .finish()
    }
}

/// `GET /version`: the fake answers as a v1.36.1 API server.
async fn version() -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::json!({
        "major": "1",
        "minor": "36",
        "gitVersion": "v1.36.1",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64"
    }))
}

impl FakeApiServer {
    /// Starts a server on a free loopback port.
    pub async fn start() -> FakeApiServer {
        let (changes, _) = broadcast::channel(1 << 16);
        let fake = Arc::new(Fake {
            store: Mutex::new(Store::default()),
            changes,
            binding_gate: Mutex::new(None),
        });
        let app = Router::new()
            .route("/version", get(version))
            .route("/api/v1/pods", get(list_pods))
            .route("/api/v1/nodes", get(list_nodes))
            .route("/api/v1/services", get(list_services))
            .route(
                "/api/v1/replicationcontrollers",
                get(list_replicationcontrollers),
            )
            .route("/api/v1/namespaces", get(list_namespaces))
            .route("/apis/apps/v1/replicasets", get(list_replicasets))
            .route("/apis/apps/v1/statefulsets", get(list_statefulsets))
            .route(
                "/apis/policy/v1/poddisruptionbudgets",
                get(list_poddisruptionbudgets),
            )
            .route(
                "/api/v1/namespaces/{ns}/pods/{name}/binding",
                post(bind_pod),
            )
            .route(
                "/api/v1/namespaces/{ns}/pods/{name}/status",
                axum::routing::patch(patch_pod_status),
            )
            .route(
                "/api/v1/namespaces/{ns}/pods/{name}",
                axum::routing::delete(delete_pod),
            )
            .route(
                "/apis/events.k8s.io/v1/namespaces/{ns}/events",
                post(create_event),
            )
            .route(
                "/apis/events.k8s.io/v1/namespaces/{ns}/events/{name}",
                axum::routing::patch(patch_event),
            )
            .route(
                "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
                post(create_lease),
            )
            .route(
                "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}",
                get(get_lease).put(replace_lease),
            );
        let app = scheduling::routes(storage::routes(app))
            .layer(axum::middleware::from_fn_with_state(
                fake.clone(),
                record_request,
            ))
            .with_state(fake.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("local address");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeApiServer { fake, addr, task }
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A kube-rs client for this server (plain HTTP on loopback).
    pub fn client(&self) -> kube::Client {
        let url = format!("http://{}", self.addr).parse().expect("url");
        let config = kube::Config::new(url);
        kube::Client::try_from(config).expect("client")
    }

    /// A node with this much CPU and memory, allowing 110 pods.
    pub fn node(name: &str, cpu: &str, memory: &str) -> Node {
        let mut n = Node::default();
        n.metadata.name = Some(name.into());
        n.metadata.labels = Some(BTreeMap::from([(
            "kubernetes.io/hostname".to_string(),
            name.to_string(),
        )]));
        let alloc = BTreeMap::from([
            ("cpu".to_string(), Quantity(cpu.into())),
            ("memory".to_string(), Quantity(memory.into())),
            ("pods".to_string(), Quantity("110".into())),
        ]);
        n.status = Some(NodeStatus {
            allocatable: Some(alloc.clone()),
            capacity: Some(alloc),
            ..Default::default()
        });
        n
    }

    /// A pending pod in `default` for `scheduler` requesting this much CPU.
    pub fn pod(name: &str, scheduler: &str, cpu: &str) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some(name.into());
        p.metadata.namespace = Some("default".into());
        p.spec = Some(PodSpec {
            scheduler_name: Some(scheduler.into()),
            containers: vec![Container {
                name: "c".into(),
                image: Some("registry.k8s.io/pause:2.0".into()),
                resources: Some(ResourceRequirements {
                    requests: Some(BTreeMap::from([("cpu".to_string(), Quantity(cpu.into()))])),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        });
        p
    }

    /// Adds (or replaces) a node without telling the watchers: as a change a watch
    /// missed, that only a relist shows (see [`FakeApiServer::expire_watches`]).
    pub fn add_node_unwatched(&self, node: Node) {
        let mut v = serde_json::to_value(&node).expect("node json");
        v["apiVersion"] = json!("v1");
        v["kind"] = json!("Node");
        let name = node.metadata.name.clone().unwrap_or_default();
        let mut s = self.fake.lock();
        s.rv += 1;
        v["metadata"]["resourceVersion"] = json!(s.rv.to_string());
        s.nodes.insert(name, v);
    }

    /// Compacts the history as etcd does: every watch open now ends with 410 Gone
    /// (`Expired`), and a watch from an older resourceVersion is answered the same,
    /// so that a client must relist.
    pub fn expire_watches(&self) {
        let mut s = self.fake.lock();
        s.compacted = s.rv;
        s.history.clear();
        let _ = self.fake.changes.send(Change {
            rv: s.rv,
            resource: "*",
            type_: "EXPIRE",
            object: Value::Null,
        });
    }

    /// How many list requests (not watches) were made for `resource` (`pods`,
    /// `nodes`, ...).
    pub fn list_count(&self, resource: &str) -> usize {
        let suffix = format!("/{resource}");
        self.fake
            .lock()
            .requests
            .iter()
            .filter(|(m, p)| {
                let path = p.split('?').next().unwrap_or("");
                m == "GET" && path.ends_with(&suffix) && !p.contains("watch=true")
            })
            .count()
    }

    /// Adds (or replaces) a node.
    pub fn add_node(&self, node: Node) {
        let mut v = serde_json::to_value(&node).expect("node json");
        v["apiVersion"] = json!("v1");
        v["kind"] = json!("Node");
        let name = node.metadata.name.clone().unwrap_or_default();
        let mut s = self.fake.lock();
        let type_ = if s.nodes.contains_key(&name) {
            "MODIFIED"
        } else {
            "ADDED"
        };
        s.record(&self.fake.changes, "nodes", type_, &mut v);
        s.nodes.insert(name, v);
    }

    /// Adds many nodes at once.
    pub fn add_nodes(&self, nodes: impl IntoIterator<Item = Node>) {
        for n in nodes {
            self.add_node(n);
        }
    }

    /// Adds (or replaces) a pod; a UID is given when it has none.
    pub fn add_pod(&self, pod: Pod) {
        self.add_pod_value(serde_json::to_value(&pod).expect("pod json"));
    }

    /// Adds (or replaces) a pod given as JSON, with fields k8s-openapi's `Pod` does
    /// not have (v1.35's `spec.workloadRef`), and tells the watchers.
    pub fn add_pod_value(&self, mut v: Value) {
        v["apiVersion"] = json!("v1");
        v["kind"] = json!("Pod");
        let ns = v["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default")
            .to_string();
        let name = v["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        v["metadata"]["namespace"] = json!(ns);
        if v["metadata"]["uid"].is_null() {
            v["metadata"]["uid"] = json!(format!("uid-{ns}-{name}"));
        }
        let k = key(&ns, &name);
        let mut s = self.fake.lock();
        let type_ = if s.pods.contains_key(&k) {
            "MODIFIED"
        } else {
            "ADDED"
        };
        s.record(&self.fake.changes, "pods", type_, &mut v);
        s.pods.insert(k, v);
    }

    /// Adds (or replaces) a Service, ReplicationController, ReplicaSet, StatefulSet,
    /// Namespace or PodDisruptionBudget, or a storage or `resource.k8s.io` object
    /// (PersistentVolume, claim, StorageClass, CSI object, DeviceClass, ResourceSlice,
    /// ResourceClaim, ResourceClaimTemplate); a UID is given when it has none.
    pub fn apply_object<K>(&self, object: &K)
    where
        K: kube::Resource<DynamicType = ()> + serde::Serialize,
    {
        let resource = object_resource(&K::plural(&()));
        let mut v = serde_json::to_value(object).expect("object json");
        v["apiVersion"] = json!(K::api_version(&()));
        v["kind"] = json!(K::kind(&()));
        let m = object.meta();
        let k = match &m.namespace {
            Some(ns) => key(ns, m.name.as_deref().unwrap_or("")),
            None => m.name.clone().unwrap_or_default(),
        };
        if v["metadata"]["uid"].is_null() {
            v["metadata"]["uid"] = json!(format!("uid-{resource}-{k}"));
        }
        let mut s = self.fake.lock();
        let type_ = if s.objects.get(resource).is_some_and(|o| o.contains_key(&k)) {
            "MODIFIED"
        } else {
            "ADDED"
        };
        s.record(&self.fake.changes, resource, type_, &mut v);
        s.objects.entry(resource).or_default().insert(k, v);
    }

    /// Deletes a pod (`namespace/name`).
    pub fn delete_pod(&self, key: &str) {
        let mut s = self.fake.lock();
        if let Some(mut v) = s.pods.remove(key) {
            s.record(&self.fake.changes, "pods", "DELETED", &mut v);
        }
    }

    /// A pod's current object.
    pub fn get_pod(&self, key: &str) -> Option<Pod> {
        let s = self.fake.lock();
        s.pods
            .get(key)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    /// The node a pod is bound to.
    pub fn node_of(&self, key: &str) -> Option<String> {
        self.get_pod(key)
            .and_then(|p| p.spec)
            .and_then(|s| s.node_name)
    }

    /// Answers no binding request until `n` have arrived, then all of them (and every
    /// later one at once): the scheduler binds `n` pods only if it has `n` bindings in
    /// flight together.
    pub fn hold_bindings_until(&self, n: usize) {
        let gate = BindingGate {
            need: n,
            arrived: Default::default(),
            open: tokio::sync::watch::Sender::new(n == 0),
        };
        *self
            .fake
            .binding_gate
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(gate));
    }

    /// How many binding requests have arrived since [`FakeApiServer::hold_bindings_until`].
    pub fn bindings_arrived(&self) -> usize {
        self.fake
            .binding_gate
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map_or(0, |g| g.arrived.load(std::sync::atomic::Ordering::SeqCst))
    }

    /// Every successful binding so far, in order: (pod key, node).
    pub fn bindings(&self) -> Vec<(String, String)> {
        self.fake.lock().bindings.clone()
    }

    /// How many pods are bound.
    pub fn bound_count(&self) -> usize {
        self.fake
            .lock()
            .pods
            .values()
            .filter(|p| p["spec"]["nodeName"].is_string())
            .count()
    }

    /// Every event written, as JSON.
    pub fn events(&self) -> Vec<Value> {
        self.fake.lock().events.clone()
    }

    /// The events about one pod (`namespace/name`): (reason, note, reportingController).
    pub fn events_for(&self, key: &str) -> Vec<(String, String, String)> {
        let (ns, name) = key.split_once('/').unwrap_or(("default", key));
        self.events()
            .iter()
            .filter(|e| e["regarding"]["name"] == name && e["regarding"]["namespace"] == ns)
            .map(|e| {
                let s = |f: &str| e[f].as_str().unwrap_or("").to_string();
                (s("reason"), s("note"), s("reportingController"))
            })
            .collect()
    }

    /// The pods (`namespace/name`) deleted through the API, in order.
    pub fn deleted_through_api(&self) -> Vec<String> {
        self.fake.lock().deleted.clone()
    }

    /// Makes "another scheduler" bind the pod (`namespace/name`) to `node` just before
    /// the next binding request for it arrives, which then fails with 409 Conflict.
    pub fn steal_next_binding(&self, key: &str, node: &str) {
        self.fake
            .lock()
            .steal
            .insert(key.to_string(), node.to_string());
    }

    /// Every request received so far, in order: (method, path with query), e.g.
    /// `("GET", "/api/v1/nodes?limit=500")`.
    pub fn requests(&self) -> Vec<(String, String)> {
        self.fake.lock().requests.clone()
    }

    /// The holder of a lease (`namespace/name`).
    pub fn lease_holder(&self, key: &str) -> Option<String> {
        let s = self.fake.lock();
        s.leases
            .get(key)
            .and_then(|l| l["spec"]["holderIdentity"].as_str().map(String::from))
    }
}

async fn record_request(
    State(fake): State<Arc<Fake>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let target = request
        .uri()
        .path_and_query()
        .map_or_else(|| request.uri().path().to_string(), |p| p.to_string());
    fake.lock()
        .requests
        .push((request.method().to_string(), target));
    next.run(request).await
}

async fn list_or_watch(
    fake: Arc<Fake>,
    resource: &'static str,
    q: HashMap<String, String>,
) -> Response {
    let kind = match resource {
        "pods" => "PodList",
        "nodes" => "NodeList",
        "services" => "ServiceList",
        "replicationcontrollers" => "ReplicationControllerList",
        "namespaces" => "NamespaceList",
        "replicasets" => "ReplicaSetList",
        "statefulsets" => "StatefulSetList",
        "poddisruptionbudgets" => "PodDisruptionBudgetList",
        _ => "List",
    };
    let watch = q.get("watch").map(String::as_str) == Some("true");
    let refused = {
        let s = fake.lock();
        s.refused.get(resource).map(|code| (*code, "list")).or(s
            .refused_watches
            .get(resource)
            .filter(|_| watch)
            .map(|code| (*code, "watch")))
    };
    if let Some((code, verb)) = refused {
        let message = if code == 404 {
            "the server could not find the requested resource".to_owned()
        } else {
            let (plural, group, qualified) = match scheduling::plural_and_group(resource) {
                Some((plural, group)) => (plural, group, format!("{plural}.{group}")),
                None => (
                    resource,
                    storage::group(resource),
                    storage::qualified(resource),
                ),
            };
            format!(
                "{qualified} is forbidden: User \"system:serviceaccount:kube-system:reader\" cannot {verb} resource \"{plural}\" in API group \"{group}\" at the cluster scope"
            )
        };
        let reason = if code == 404 { "NotFound" } else { "Forbidden" };
        return status(code, reason, message);
    }
    if !watch {
        let s = fake.lock();
        let items: Vec<&Value> = match resource {
            "pods" => s.pods.values().collect(),
            "nodes" => s.nodes.values().collect(),
            r => s
                .objects
                .get(r)
                .map(|m| m.values().collect())
                .unwrap_or_default(),
        };
        // Paging: `continue` is the offset of the first item, `limit` the page size.
        let offset: usize = q
            .get("continue")
            .and_then(|c| c.parse().ok())
            .unwrap_or(0)
            .min(items.len());
        let limit: usize = q
            .get("limit")
            .and_then(|l| l.parse().ok())
            .filter(|l| *l > 0)
            .unwrap_or(usize::MAX);
        let end = offset.saturating_add(limit).min(items.len());
        let mut metadata = json!({"resourceVersion": s.rv.to_string()});
        if end < items.len() {
            metadata["continue"] = json!(end.to_string());
        }
        let body = json!({
            "kind": kind, "apiVersion": "v1",
            "metadata": metadata,
            "items": &items[offset..end],
        });
        return axum::Json(body).into_response();
    }
    let since: u64 = q
        .get("resourceVersion")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let (backlog, mut rx, expired) = {
        let s = fake.lock();
        let expired = since != 0 && since < s.compacted;
        let backlog: Vec<Change> = s
            .history
            .iter()
            .filter(|c| c.rv > since && c.resource == resource)
            .cloned()
            .collect();
        (backlog, fake.changes.subscribe(), expired)
    };
    let (tx, out) = tokio::sync::mpsc::channel::<Bytes>(1024);
    tokio::spawn(async move {
        let gone = || {
            let gone = json!({"type": "ERROR", "object": {
                "kind": "Status", "apiVersion": "v1", "status": "Failure",
                "reason": "Expired", "code": 410, "message": "too old resource version"}});
            let mut b = serde_json::to_vec(&gone).unwrap_or_default();
            b.push(b'\n');
            Bytes::from(b)
        };
        if expired {
            let _ = tx.send(gone()).await;
            return;
        }
        let line = |c: &Change| {
            let mut b = serde_json::to_vec(&json!({"type": c.type_, "object": c.object}))
                .unwrap_or_default();
            b.push(b'\n');
            Bytes::from(b)
        };
        for c in &backlog {
            if tx.send(line(c)).await.is_err() {
                return;
            }
        }
        loop {
            match rx.recv().await {
                Ok(c) if c.type_ == "EXPIRE" => {
                    let _ = tx.send(gone()).await;
                    return;
                }
                Ok(c) if c.resource == resource && c.rv > since => {
                    if tx.send(line(&c)).await.is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let _ = tx.send(gone()).await;
                    return;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    });
    let stream = futures::stream::unfold(out, |mut out| async move {
        out.recv().await.map(|b| (Ok::<_, Infallible>(b), out))
    });
    Response::builder()
        .header("content-type", "application/json")
        .body(Body::from_stream(stream))
        .unwrap_or_default()
}

list_handlers!(
    list_pods => "pods",
    list_nodes => "nodes",
    list_services => "services",
    list_replicationcontrollers => "replicationcontrollers",
    list_namespaces => "namespaces",
    list_replicasets => "replicasets",
    list_statefulsets => "statefulsets",
    list_poddisruptionbudgets => "poddisruptionbudgets"
);

/// The resource name of a kind the fake lists besides pods and nodes.
fn object_resource(plural: &str) -> &'static str {
    match plural {
        "services" => "services",
        "replicationcontrollers" => "replicationcontrollers",
        "namespaces" => "namespaces",
        "replicasets" => "replicasets",
        "statefulsets" => "statefulsets",
        "poddisruptionbudgets" => "poddisruptionbudgets",
        other => storage::resource(other)
            .unwrap_or_else(|| panic!("FakeApiServer does not serve {other}")),
    }
}

/// A request's body as JSON. The runtime sends the built-in kinds in protobuf, which
/// a real API server takes: decoded here with kubesched's own decoder (the fake
/// answers in JSON, which the runtime also takes).
fn decode_body<K>(headers: &HeaderMap, body: &[u8]) -> Option<Value>
where
    K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned + serde::Serialize,
{
    let protobuf = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with(crate::protobuf::PROTOBUF));
    if protobuf {
        let object: K = crate::protobuf::decode_of(body).ok()?;
        serde_json::to_value(object).ok()
    } else {
        serde_json::from_slice(body).ok()
    }
}

async fn bind_pod(
    State(fake): State<Arc<Fake>>,
    Path((ns, name)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(binding) = decode_body::<k8s_openapi::api::core::v1::Binding>(&headers, &body) else {
        return status(400, "BadRequest", "invalid binding".into());
    };
    let Some(node) = binding["target"]["name"].as_str().map(String::from) else {
        return status(400, "BadRequest", "binding has no target".into());
    };
    let gate = fake
        .binding_gate
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    if let Some(gate) = gate {
        let mut open = gate.open.subscribe();
        let arrived = gate
            .arrived
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        if arrived >= gate.need {
            gate.open.send_replace(true);
        }
        let _ = open.wait_for(|open| *open).await;
    }
    let k = key(&ns, &name);
    let mut s = fake.lock();
    if let Some(other) = s.steal.remove(&k)
        && let Some(mut pod) = s.pods.get(&k).cloned()
    {
        pod["spec"]["nodeName"] = json!(other);
        s.record(&fake.changes, "pods", "MODIFIED", &mut pod);
        s.pods.insert(k.clone(), pod);
    }
    let Some(mut pod) = s.pods.get(&k).cloned() else {
        return status(404, "NotFound", format!("pods \"{name}\" not found"));
    };
    if let Some(current) = pod["spec"]["nodeName"].as_str() {
        return status(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on pods/binding \"{name}\": pod {name} is already assigned to node \"{current}\""
            ),
        );
    }
    pod["spec"]["nodeName"] = json!(node);
    let conditions = pod["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut conditions: Vec<Value> = conditions
        .into_iter()
        .filter(|c| c["type"] != "PodScheduled")
        .collect();
    conditions.push(json!({"type": "PodScheduled", "status": "True"}));
    pod["status"]["conditions"] = json!(conditions);
    s.record(&fake.changes, "pods", "MODIFIED", &mut pod);
    s.pods.insert(k.clone(), pod);
    s.bindings.push((k, node));
    (
        StatusCode::CREATED,
        axum::Json(json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})),
    )
        .into_response()
}

async fn patch_pod_status(
    State(fake): State<Arc<Fake>>,
    Path((ns, name)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let Ok(patch) = serde_json::from_slice::<Value>(&body) else {
        return status(400, "BadRequest", "invalid patch".into());
    };
    let k = key(&ns, &name);
    let mut s = fake.lock();
    let Some(mut pod) = s.pods.get(&k).cloned() else {
        return status(404, "NotFound", format!("pods \"{name}\" not found"));
    };
    // Strategic merge of status.conditions, keyed by type.
    if let Some(new) = patch["status"]["conditions"].as_array() {
        let mut conditions = pod["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for c in new {
            match conditions.iter_mut().find(|o| o["type"] == c["type"]) {
                Some(o) => {
                    if let (Some(o), Some(c)) = (o.as_object_mut(), c.as_object()) {
                        for (k, v) in c {
                            o.insert(k.clone(), v.clone());
                        }
                    }
                }
                None => conditions.push(c.clone()),
            }
        }
        pod["status"]["conditions"] = json!(conditions);
    }
    // status.nominatedNodeName: set, or removed by null.
    if let Some(n) = patch["status"].get("nominatedNodeName") {
        match n {
            Value::Null => {
                if let Some(st) = pod["status"].as_object_mut() {
                    st.remove("nominatedNodeName");
                }
            }
            n => pod["status"]["nominatedNodeName"] = n.clone(),
        }
    }
    s.record(&fake.changes, "pods", "MODIFIED", &mut pod);
    s.pods.insert(k, pod.clone());
    axum::Json(pod).into_response()
}

async fn delete_pod(
    State(fake): State<Arc<Fake>>,
    Path((ns, name)): Path<(String, String)>,
) -> Response {
    let k = key(&ns, &name);
    let mut s = fake.lock();
    let Some(mut pod) = s.pods.remove(&k) else {
        return status(404, "NotFound", format!("pods \"{name}\" not found"));
    };
    s.record(&fake.changes, "pods", "DELETED", &mut pod);
    s.deleted.push(k);
    axum::Json(pod).into_response()
}

async fn patch_event(
    State(fake): State<Arc<Fake>>,
    Path((ns, name)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let Ok(patch) = serde_json::from_slice::<Value>(&body) else {
        return status(400, "BadRequest", "invalid patch".into());
    };
    let mut s = fake.lock();
    let found = s
        .events
        .iter_mut()
        .find(|e| e["metadata"]["namespace"] == json!(ns) && e["metadata"]["name"] == json!(name));
    match found {
        Some(e) => {
            if let Some(series) = patch.get("series") {
                e["series"] = series.clone();
            }
            (StatusCode::OK, axum::Json(e.clone())).into_response()
        }
        None => status(
            404,
            "NotFound",
            format!("events.events.k8s.io \"{name}\" not found"),
        ),
    }
}

async fn create_event(
    State(fake): State<Arc<Fake>>,
    Path(ns): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(mut event) = decode_body::<k8s_openapi::api::events::v1::Event>(&headers, &body)
    else {
        return status(400, "BadRequest", "invalid event".into());
    };
    event["metadata"]["namespace"] = json!(ns);
    fake.lock().events.push(event.clone());
    (StatusCode::CREATED, axum::Json(event)).into_response()
}

async fn get_lease(
    State(fake): State<Arc<Fake>>,
    Path((ns, name)): Path<(String, String)>,
) -> Response {
    match fake.lock().leases.get(&key(&ns, &name)) {
        Some(l) => axum::Json(l.clone()).into_response(),
        None => status(
            404,
            "NotFound",
            format!("leases.coordination.k8s.io \"{name}\" not found"),
        ),
    }
}

async fn create_lease(
    State(fake): State<Arc<Fake>>,
    Path(ns): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(mut lease) = decode_body::<Lease>(&headers, &body) else {
        return status(400, "BadRequest", "invalid lease".into());
    };
    let name = lease["metadata"]["name"].as_str().unwrap_or("").to_string();
    let k = key(&ns, &name);
    let mut s = fake.lock();
    if s.leases.contains_key(&k) {
        return status(
            409,
            "AlreadyExists",
            format!("leases.coordination.k8s.io \"{name}\" already exists"),
        );
    }
    lease["metadata"]["namespace"] = json!(ns);
    s.record(&fake.changes, "leases", "ADDED", &mut lease);
    s.leases.insert(k, lease.clone());
    (StatusCode::CREATED, axum::Json(lease)).into_response()
}

async fn replace_lease(
    State(fake): State<Arc<Fake>>,
    Path((ns, name)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(mut lease) = decode_body::<Lease>(&headers, &body) else {
        return status(400, "BadRequest", "invalid lease".into());
    };
    let k = key(&ns, &name);
    let mut s = fake.lock();
    let Some(current) = s.leases.get(&k) else {
        return status(
            404,
            "NotFound",
            format!("leases.coordination.k8s.io \"{name}\" not found"),
        );
    };
    if lease["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"] {
        return status(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on leases.coordination.k8s.io \"{name}\": the object has been modified; please apply your changes to the latest version and try again"
            ),
        );
    }
    s.record(&fake.changes, "leases", "MODIFIED", &mut lease);
    s.leases.insert(k, lease.clone());
    axum::Json(lease).into_response()
}

/// Accepts any server certificate: only for reaching a self-signed test endpoint.
#[derive(Debug)]
struct NoVerify(Arc<tokio_rustls::rustls::crypto::CryptoProvider>);

impl tokio_rustls::rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _: &rustls_pki_types::CertificateDer<'_>,
        _: &[rustls_pki_types::CertificateDer<'_>],
        _: &rustls_pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls_pki_types::UnixTime,
    ) -> Result<tokio_rustls::rustls::client::danger::ServerCertVerified, tokio_rustls::rustls::Error>
    {
        Ok(tokio_rustls::rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls_pki_types::CertificateDer<'_>,
        dss: &tokio_rustls::rustls::DigitallySignedStruct,
    ) -> Result<
        tokio_rustls::rustls::client::danger::HandshakeSignatureValid,
        tokio_rustls::rustls::Error,
    > {
        tokio_rustls::rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls_pki_types::CertificateDer<'_>,
        dss: &tokio_rustls::rustls::DigitallySignedStruct,
    ) -> Result<
        tokio_rustls::rustls::client::danger::HandshakeSignatureValid,
        tokio_rustls::rustls::Error,
    > {
        tokio_rustls::rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<tokio_rustls::rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `GET https://addr/path` without verifying the certificate (the secure port's
/// self-signed one): the status code and body.
pub async fn https_get_insecure(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    https_get_insecure_as(addr, path, None).await
}

/// [`https_get_insecure`] with `Authorization: Bearer TOKEN` when a token is given.
pub async fn https_get_insecure_as(
    addr: SocketAddr,
    path: &str,
    token: Option<&str>,
) -> std::io::Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::rustls;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(std::io::Error::other)?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let name =
        rustls_pki_types::ServerName::try_from("localhost").map_err(std::io::Error::other)?;
    let mut tls = connector.connect(name, tcp).await?;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{auth}Connection: close\r\n\r\n");
    tls.write_all(req.as_bytes()).await?;
    let mut buf = Vec::new();
    let _ = tls.read_to_end(&mut buf).await;
    let text = String::from_utf8_lossy(&buf).to_string();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((code, body))
}
