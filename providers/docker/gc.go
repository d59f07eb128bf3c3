package docker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/volume"
)

// GCReport says what a GC removed.
type GCReport struct {
	Containers []string `json:"containers"`
	Volumes    []string `json:"volumes"`
}

// GC removes the containers and volumes carrying this instance's labels
// whose binding is gone (no state file, or a torn-down one) and, when
// olderThan > 0, those created more than olderThan ago whatever their
// binding (a binding that loses its resources this way reports
// resource_lost on its next execute; nothing is re-created). Resources of
// bindings with an execute running in this process are never touched.
// Resources without this instance's labels are never touched.
//
// The resources are listed before the bindings are read: a binding's
// state file is written before anything of it is created (the probe
// container of its setup, its allocation), so a resource the lists hold
// belongs to a binding the state directory already shows, unless that
// binding is gone. Reading the bindings first would take the resources
// a setup or allocation creates meanwhile for leftovers.
func (p *Provider) GC(ctx context.Context, olderThan time.Duration) (GCReport, error) {
	rep := GCReport{Containers: []string{}, Volumes: []string{}}
	f := instanceFilter(p.instance)
	cs, err := p.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return rep, fmt.Errorf("docker: gc: list containers: %w", err)
	}
	vs, err := p.cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return rep, fmt.Errorf("docker: gc: list volumes: %w", err)
	}
	live, err := p.liveBindings()
	if err != nil {
		return rep, err
	}
	now := p.now()
	doomed := func(labels map[string]string, created time.Time) bool {
		key := labels[LabelBinding]
		if live[key] == liveBusy {
			return false
		}
		if live[key] == liveNone {
			return true
		}
		if t, ok := createdAt(labels); ok {
			created = t
		}
		return olderThan > 0 && now.Sub(created) > olderThan
	}
	var errs []error
	for _, c := range cs {
		if !doomed(c.Labels, time.Unix(c.Created, 0)) {
			continue
		}
		if err := removeContainer(ctx, p.cli, c.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		name := c.ID
		if len(c.Names) > 0 {
			name = c.Names[0][1:]
		}
		rep.Containers = append(rep.Containers, name)
	}
	for _, v := range vs.Volumes {
		created, _ := time.Parse(time.RFC3339, v.CreatedAt)
		if !doomed(v.Labels, created) {
			continue
		}
		if err := removeVolume(ctx, p.cli, v.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		rep.Volumes = append(rep.Volumes, v.Name)
	}
	return rep, errors.Join(errs...)
}

type liveness int

const (
	liveNone liveness = iota // no state, or torn down
	liveIdle                 // set up, nothing running here
	liveBusy                 // an execute or lifecycle operation is running here
)

// liveBindings reads the state directory (the truth even for another
// process on the same directory, such as the gc command) and marks the
// bindings busy in this process.
func (p *Provider) liveBindings() (map[string]liveness, error) {
	states, err := p.store.list()
	if err != nil {
		return nil, fmt.Errorf("docker: gc: %w (nothing removed)", err)
	}
	live := map[string]liveness{}
	for _, st := range states {
		if st.Phase != phaseDeleted {
			live[st.Key] = liveIdle
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, b := range p.bindings {
		b.mu.Lock()
		if len(b.active) > 0 || b.settling {
			live[key] = liveBusy
		}
		b.mu.Unlock()
	}
	return live, nil
}
