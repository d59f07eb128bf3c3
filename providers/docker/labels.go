package docker

import (
	"strconv"
	"time"

	"github.com/docker/docker/api/types/filters"
)

// Labels carried by every container and volume the provider creates.
const (
	// LabelProvider is always ProviderName.
	LabelProvider = "brain.provider"
	// LabelInstance names the provider instance (a digest of its state
	// directory), so that gc never touches another instance's resources.
	LabelInstance = "brain.instance"
	// LabelSession, LabelEnvironment and LabelBinding name the binding;
	// LabelBinding is its binding key.
	LabelSession     = "brain.session"
	LabelEnvironment = "brain.environment"
	LabelBinding     = "brain.binding"
	// LabelResource is the binding's resource id, which also names its
	// container and volume.
	LabelResource = "brain.resource"
	// LabelCreated is the creation time in Unix seconds.
	LabelCreated = "brain.created"
)

// ProviderName is the value of LabelProvider.
const ProviderName = "docker"

// bindingLabels are the labels of one binding's container and volume.
func bindingLabels(instance string, st *bindingState, now time.Time) map[string]string {
	return map[string]string{
		LabelProvider:    ProviderName,
		LabelInstance:    instance,
		LabelSession:     st.SessionID,
		LabelEnvironment: st.Environment,
		LabelBinding:     st.Key,
		LabelResource:    st.Resource,
		LabelCreated:     strconv.FormatInt(now.Unix(), 10),
	}
}

// instanceFilter selects everything this provider instance created.
func instanceFilter(instance string) filters.Args {
	return filters.NewArgs(
		filters.Arg("label", LabelProvider+"="+ProviderName),
		filters.Arg("label", LabelInstance+"="+instance),
	)
}

// bindingFilter selects one binding's resources.
func bindingFilter(instance, key string) filters.Args {
	f := instanceFilter(instance)
	f.Add("label", LabelBinding+"="+key)
	return f
}

// createdAt reads LabelCreated; ok is false when it is absent or garbled.
func createdAt(labels map[string]string) (time.Time, bool) {
	v, ok := labels[LabelCreated]
	if !ok {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(n, 0), true
}
