//! The snapshot PersistentVolumeClaim the operator creates on request.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PersistentVolumeClaimSpec, VolumeResourceRequirements};
use playpen_api::BrowserSession;

use super::{labels::child_meta, Identity};

/// `<name>-snapshots` when the spec asks for a new claim of a given size.
pub fn snapshot_claim(bs: &BrowserSession, id: &Identity) -> Option<PersistentVolumeClaim> {
    let claim = bs.spec.browser.snapshots.volume.persistent_volume_claim.as_ref()?;
    let size = claim.size.clone()?;
    Some(PersistentVolumeClaim {
        metadata: child_meta(id, &id.names.snapshot_claim, "snapshots"),
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            storage_class_name: claim.storage_class_name.clone(),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([("storage".to_owned(), size)])),
                ..VolumeResourceRequirements::default()
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    })
}
