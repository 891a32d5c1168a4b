//! The runtime's requests in its encoding ([`Encoding`]): protobuf bodies and answers
//! for the built-in kinds, as kube-scheduler's clients send them, JSON for the rest
//! and as the fallback. Whatever the API server answers in is decoded by its
//! Content-Type; an error's `Status` becomes `kube::Error::Api` either way.

use http::header::{ACCEPT, CONTENT_TYPE};
use http_body_util::BodyExt;
use kube::api::{GetParams, PostParams};
use kube::core::Status;
use serde::Serialize;

use crate::protobuf::{self, PROTOBUF};
use crate::watch::{Encoding, Listable};

/// What `Accept` asks for in protobuf: protobuf where the server has it.
const ACCEPT_PROTOBUF: &str = "application/vnd.kubernetes.protobuf, application/json";

/// A client and the encoding its requests ask for.
#[derive(Clone)]
pub(crate) struct Requests {
    pub(crate) client: kube::Client,
    pub(crate) encoding: Encoding,
}

/// A body that did not decode, as kube reports a stream it could not read.
pub(crate) fn decode_error(e: protobuf::Error) -> kube::Error {
    kube::Error::ReadEvents(std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

impl Requests {
    pub(crate) fn new(client: kube::Client, encoding: Encoding) -> Requests {
        Requests { client, encoding }
    }

    /// Sends `request`, asking for protobuf when `protobuf`; the answer's body and
    /// whether it is protobuf, or the error its Status says.
    pub(crate) async fn send(
        &self,
        mut request: http::Request<Vec<u8>>,
        protobuf: bool,
    ) -> Result<(bool, kube::client::Body), kube::Error> {
        if protobuf {
            request
                .headers_mut()
                .insert(ACCEPT, http::HeaderValue::from_static(ACCEPT_PROTOBUF));
        }
        let response = self
            .client
            .send(request.map(kube::client::Body::from))
            .await?;
        let is_protobuf = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with(PROTOBUF));
        let status = response.status();
        if status.is_client_error() || status.is_server_error() {
            let body = response.into_body().collect().await?.to_bytes();
            let decoded = if is_protobuf {
                protobuf::decode_status(&body).ok()
            } else {
                serde_json::from_slice::<Status>(&body).ok()
            };
            let status = decoded.unwrap_or_else(|| {
                Status::failure(
                    String::from_utf8_lossy(&body).trim(),
                    "Failed to parse error data",
                )
                .with_code(status.as_u16())
            });
            return Err(kube::Error::Api(Box::new(status)));
        }
        Ok((is_protobuf, response.into_body()))
    }

    /// Whether `K` goes in protobuf.
    fn protobuf_for<K: kube::Resource<DynamicType = ()>>(&self) -> bool {
        self.encoding == Encoding::Protobuf && protobuf::message_of::<K>().is_some()
    }

    /// `value`'s body and its content type: protobuf when asked for and the schema
    /// has all of it, else JSON.
    fn body<B: kube::Resource<DynamicType = ()> + Serialize>(
        &self,
        value: &B,
    ) -> Result<(Vec<u8>, &'static str), kube::Error> {
        if self.protobuf_for::<B>() {
            match protobuf::encode(value) {
                Ok(bytes) => return Ok((bytes, PROTOBUF)),
                Err(e) => tracing::debug!(error = %e, kind = %B::kind(&()), "sending JSON"),
            }
        }
        Ok((
            serde_json::to_vec(value).map_err(kube::Error::SerdeError)?,
            "application/json",
        ))
    }

    /// Sends `request` (with a body of `content_type`, if any) and decodes the answer
    /// as `K`.
    async fn object<K: Listable>(
        &self,
        mut request: http::Request<Vec<u8>>,
        content_type: Option<&'static str>,
    ) -> Result<K, kube::Error> {
        if let Some(content_type) = content_type {
            request
                .headers_mut()
                .insert(CONTENT_TYPE, http::HeaderValue::from_static(content_type));
        }
        let (is_protobuf, body) = self.send(request, self.protobuf_for::<K>()).await?;
        let body = body.collect().await?.to_bytes();
        if is_protobuf {
            protobuf::decode_of(&body).map_err(decode_error)
        } else {
            serde_json::from_slice(&body).map_err(kube::Error::SerdeError)
        }
    }

    /// GETs `name`; `None` when it does not exist.
    pub(crate) async fn get_opt<K: Listable>(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<K>, kube::Error> {
        let request = kube::core::Request::new(K::url_path(&(), namespace))
            .get(name, &GetParams::default())
            .map_err(kube::Error::BuildRequest)?;
        match self.object(request, None).await {
            Ok(k) => Ok(Some(k)),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// POSTs a new `object`.
    pub(crate) async fn create<K: Listable + Serialize>(
        &self,
        namespace: Option<&str>,
        object: &K,
    ) -> Result<K, kube::Error> {
        let (body, content_type) = self.body(object)?;
        let request = kube::core::Request::new(K::url_path(&(), namespace))
            .create(&PostParams::default(), body)
            .map_err(kube::Error::BuildRequest)?;
        self.object(request, Some(content_type)).await
    }

    /// PUTs `object` over `name`.
    pub(crate) async fn replace<K: Listable + Serialize>(
        &self,
        namespace: Option<&str>,
        name: &str,
        object: &K,
    ) -> Result<K, kube::Error> {
        let (body, content_type) = self.body(object)?;
        let request = kube::core::Request::new(K::url_path(&(), namespace))
            .replace(name, &PostParams::default(), body)
            .map_err(kube::Error::BuildRequest)?;
        self.object(request, Some(content_type)).await
    }

    /// POSTs `body` to the subresource `subresource` of the `K` called `name`; the
    /// answer (a Status) is read and dropped.
    pub(crate) async fn create_subresource<K, B>(
        &self,
        namespace: Option<&str>,
        name: &str,
        subresource: &str,
        body: &B,
    ) -> Result<(), kube::Error>
    where
        K: kube::Resource<DynamicType = ()>,
        B: kube::Resource<DynamicType = ()> + Serialize,
    {
        let (bytes, content_type) = self.body(body)?;
        let mut request = kube::core::Request::new(K::url_path(&(), namespace))
            .create_subresource(subresource, name, &PostParams::default(), bytes)
            .map_err(kube::Error::BuildRequest)?;
        request
            .headers_mut()
            .insert(CONTENT_TYPE, http::HeaderValue::from_static(content_type));
        let (_, answer) = self.send(request, self.protobuf_for::<B>()).await?;
        answer.collect().await?;
        Ok(())
    }
}
