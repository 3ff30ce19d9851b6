// Playpen's carried change to gVisor's containerd shim (tests/cluster/build-gvisor.sh copies
// this file into pkg/shim/v1/runsc/ and renames the shim's own Start to startUnpatched).
//
// A container whose OCI spec carries restoreAnnotation is started with `runsc restore` from
// the checkpoint image that annotation names, instead of `runsc start`: the design of
// gVisor PR #14760 (open), until it or Kubernetes' Pod checkpoint/restore (KEP-5823) lands.
// containerd copies the annotation from the Pod onto the sandbox and on every container when
// the runtime's `pod_annotations` allows it; runsc restores the whole sandbox once the last
// container of the checkpoint has been restored (it matches them by container name).
//
// The path is not trusted: it must be restoreRoot/<the Pod's own UID>, the directory the
// node agent stages for exactly that Pod. A Pod that names any other path, another Pod's
// directory included, fails to start instead of reading someone else's memory.

package runsc

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/containerd/containerd/api/events"
	task "github.com/containerd/containerd/api/runtime/task/v2"
	errgrpc "github.com/containerd/errdefs/pkg/errgrpc"
	"github.com/containerd/log"

	"gvisor.dev/gvisor/pkg/shim/v1/extension"
	"gvisor.dev/gvisor/pkg/shim/v1/utils"
)

const (
	restoreAnnotation = "dev.gvisor.internal.restore.host-image-path"
	restoreRoot       = "/var/lib/playpen/restore"
	// The Pod's UID, which containerd's CRI sets on the sandbox and on every container.
	sandboxUIDAnnotation = "io.kubernetes.cri.sandbox-uid"
)

// Start starts the container, or restores it when its spec asks for a restore.
func (s *runscService) Start(ctx context.Context, r *task.StartRequest) (*task.StartResponse, error) {
	if r.ExecID != "" {
		return s.startUnpatched(ctx, r)
	}
	c, err := s.getContainer(r.ID)
	if err != nil {
		return nil, err
	}
	image, err := restoreImagePath(c.Bundle)
	if err != nil {
		return nil, errgrpc.ToGRPC(err)
	}
	if image == "" {
		return s.startUnpatched(ctx, r)
	}
	log.G(ctx).Infof("playpen: restoring container %q from %q", r.ID, image)
	resp, err := s.Restore(ctx, &extension.RestoreRequest{Start: r, Conf: extension.RestoreConfig{ImagePath: image}})
	if err != nil {
		return nil, errgrpc.ToGRPC(err)
	}
	s.send(&events.TaskStart{ContainerID: r.ID, Pid: resp.Pid})
	return resp, nil
}

// restoreImagePath is the checkpoint image the bundle's spec asks to restore from ("" for a
// plain start), checked to be the directory staged for this Pod.
func restoreImagePath(bundle string) (string, error) {
	spec, err := utils.ReadSpec(bundle)
	if err != nil {
		return "", fmt.Errorf("reading the spec of %q: %w", bundle, err)
	}
	asked, ok := spec.Annotations[restoreAnnotation]
	if !ok {
		return "", nil
	}
	uid := spec.Annotations[sandboxUIDAnnotation]
	if uid == "" || strings.ContainsAny(uid, "/.") {
		return "", fmt.Errorf("%s is set but the Pod's UID is unknown (%s is %q)", restoreAnnotation, sandboxUIDAnnotation, uid)
	}
	want := filepath.Join(restoreRoot, uid)
	if filepath.Clean(asked) != want {
		return "", fmt.Errorf("%s must be %q (the directory staged for this Pod), not %q", restoreAnnotation, want, asked)
	}
	return want, nil
}
