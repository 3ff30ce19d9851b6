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
//
// A checkpoint is restored once. A container the kubelet starts again in the same sandbox
// (a crash, restartPolicy) starts afresh, and so does a sandbox the kubelet makes again
// once the node agent has collected the directory (the Pod ran): never a restore of an
// image that is gone, which would fail the Pod for good.

package runsc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

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
	// A container's name in its Pod (none on the sandbox).
	containerNameAnnotation = "io.kubernetes.cri.container-name"
)

// The containers (by CRI name; "" is the sandbox) this shim has restored: one shim serves
// one sandbox, and each of its containers is restored at most once.
var (
	restoredMu sync.Mutex
	restored   = map[string]bool{}
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
	image, name, err := restoreImagePath(c.Bundle)
	if err != nil {
		return nil, errgrpc.ToGRPC(err)
	}
	restoredMu.Lock()
	again := restored[name]
	restored[name] = restored[name] || image != ""
	restoredMu.Unlock()
	if image == "" || again {
		if image != "" {
			log.G(ctx).Infof("playpen: container %q (%q) was restored before: started afresh", r.ID, name)
		}
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
// plain start), checked to be the directory staged for this Pod, and the container's CRI
// name.
func restoreImagePath(bundle string) (string, string, error) {
	spec, err := utils.ReadSpec(bundle)
	if err != nil {
		return "", "", fmt.Errorf("reading the spec of %q: %w", bundle, err)
	}
	name := spec.Annotations[containerNameAnnotation]
	asked, ok := spec.Annotations[restoreAnnotation]
	if !ok {
		return "", name, nil
	}
	uid := spec.Annotations[sandboxUIDAnnotation]
	if uid == "" || strings.ContainsAny(uid, "/.") {
		return "", name, fmt.Errorf("%s is set but the Pod's UID is unknown (%s is %q)", restoreAnnotation, sandboxUIDAnnotation, uid)
	}
	want := filepath.Join(restoreRoot, uid)
	if filepath.Clean(asked) != want {
		return "", name, fmt.Errorf("%s must be %q (the directory staged for this Pod), not %q", restoreAnnotation, want, asked)
	}
	if _, err := os.Stat(filepath.Join(want, "checkpoint.img")); err != nil {
		// Collected once the Pod ran: a sandbox made again starts afresh.
		return "", name, nil
	}
	return want, name, nil
}
