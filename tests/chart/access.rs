//! Access checks through the API server's own authorizer.

use k8s_openapi::api::authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec};
use kube::api::{Api, PostParams};
use kube::Client;

/// May the client's identity `verb` `resource`/`subresource` in `namespace`?
pub async fn can(
    client: &Client,
    verb: &str,
    group: &str,
    resource: &str,
    subresource: Option<&str>,
    namespace: Option<&str>,
) -> anyhow::Result<bool> {
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.into()),
                group: Some(group.into()),
                resource: Some(resource.into()),
                subresource: subresource.map(Into::into),
                namespace: namespace.map(Into::into),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let answer = api.create(&PostParams::default(), &review).await?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}
