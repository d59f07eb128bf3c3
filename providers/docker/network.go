package docker

import (
	"context"
	"fmt"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// namesNetwork says whether a profile's network is one the Engine must
// have (the Engine's own modes, "none" and "default", always exist).
func (p Profile) namesNetwork() bool {
	return p.Network != DefaultNetwork && p.Network != "default" && p.Network != ""
}

// networkAbsent answers why a profile's network cannot be joined (the
// Engine has no network of that name or ID, which it would say only when
// the first execute creates the container), nil when it can; an error
// when the Engine cannot be asked.
func (p Profile) networkAbsent(ctx context.Context, cli *client.Client) (refusal, err error) {
	if !p.namesNetwork() {
		return nil, nil
	}
	_, err = cli.NetworkInspect(ctx, p.Network, network.InspectOptions{})
	switch {
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("field network: the Engine has no network %q", p.Network), nil
	case err != nil:
		return nil, fmt.Errorf("docker: ask the Engine for network %q: %w", p.Network, err)
	}
	return nil, nil
}

// checkProfileNetwork refuses, at setup, a profile naming a network the
// Engine does not have, with invalid_configuration naming it.
func (p *Provider) checkProfileNetwork(ctx context.Context, name string, prof Profile) error {
	if !prof.namesNetwork() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	refusal, err := prof.networkAbsent(ctx, p.cli)
	if err != nil {
		return err
	}
	if refusal != nil {
		return envsdk.Failf(envapi.CodeInvalidConfiguration,
			"configuration.profile: profile %q cannot run on this Engine: %v", name, refusal).
			WithDetails(map[string]string{"field": "configuration.profile"})
	}
	return nil
}
