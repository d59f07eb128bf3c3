package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/docker/docker/client"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// nanoCPUs is a profile's CPU bound as the Engine takes it.
func nanoCPUs(cpus float64) int64 { return int64(cpus * 1e9) }

// engineCPUs asks the Engine how many CPUs it has: the most a
// container's CPU bound may be.
func engineCPUs(ctx context.Context, cli *client.Client) (int, error) {
	info, err := cli.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("docker: ask the Engine for its CPU count: %w", err)
	}
	return info.NCPU, nil
}

// cpusBeyond answers why a profile's CPU bound cannot be given on an
// Engine with ncpu CPUs (the Engine refuses to create a container whose
// bound is above its CPU count), nil when it can.
func (p Profile) cpusBeyond(ncpu int) error {
	if ncpu > 0 && nanoCPUs(p.CPUs) > int64(ncpu)*1e9 {
		return fmt.Errorf("field cpus: %g is more than the %d CPUs the Engine has", p.CPUs, ncpu)
	}
	return nil
}

// ErrProfileBeyondEngine reports profiles the Engine cannot run.
var ErrProfileBeyondEngine = errors.New("profiles the Engine cannot run")

// CheckProfiles asks the Engine whether it can run every profile: one
// whose cpus bound is above the Engine's CPU count, or that names a
// network the Engine does not have, is refused with an error wrapping
// ErrProfileBeyondEngine that names each such profile and why. An Engine
// that cannot be asked answers an error that does not wrap it: no
// profile is refused then, and setup checks the profile it is given.
func (p *Provider) CheckProfiles(ctx context.Context) error {
	needCPUs := false
	for _, prof := range p.profiles {
		needCPUs = needCPUs || prof.CPUs > 1 // every Engine has at least one CPU
	}
	ncpu := 0
	if needCPUs {
		var err error
		if ncpu, err = engineCPUs(ctx, p.cli); err != nil {
			return err
		}
	}
	var errs []string
	for _, name := range p.profiles.Names() {
		prof := p.profiles[name]
		if err := prof.cpusBeyond(ncpu); err != nil {
			errs = append(errs, fmt.Sprintf("profile %q: %v", name, err))
		}
		refusal, err := prof.networkAbsent(ctx, p.cli)
		if err != nil {
			return err
		}
		if refusal != nil {
			errs = append(errs, fmt.Sprintf("profile %q: %v", name, refusal))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("docker: %w: %s", ErrProfileBeyondEngine, strings.Join(errs, "; "))
	}
	return nil
}

// checkProfileCPUs refuses, at setup, a profile whose CPU bound the
// Engine cannot give, with invalid_configuration naming the limit.
func (p *Provider) checkProfileCPUs(ctx context.Context, name string, prof Profile) error {
	if prof.CPUs <= 1 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ncpu, err := engineCPUs(ctx, p.cli)
	if err != nil {
		return err
	}
	if err := prof.cpusBeyond(ncpu); err != nil {
		return envsdk.Failf(envapi.CodeInvalidConfiguration,
			"configuration.profile: profile %q cannot run on this Engine: %v", name, err).
			WithDetails(map[string]string{"field": "configuration.profile"})
	}
	return nil
}
