package docker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/volume"
)

// GCReport says what a GC removed, and what it would have removed but
// left because its binding was in use.
type GCReport struct {
	Containers []string `json:"containers"`
	Volumes    []string `json:"volumes"`
	Skipped    []GCSkip `json:"skipped"`
}

// GCSkip is a binding whose resources a GC left, and why: a later GC,
// once the binding is no longer in use, removes them.
type GCSkip struct {
	Binding    string   `json:"binding"`
	Reason     string   `json:"reason"`
	Containers []string `json:"containers"`
	Volumes    []string `json:"volumes"`
}

// The reasons of a GCSkip.
const (
	// SkipInUse: an execute, a setup, detach or teardown, an allocation
	// or another GC of this process runs on the binding.
	SkipInUse = "in use: an operation runs on the binding"
	// SkipInUseElsewhere: another process on the state directory (the
	// provider serving it, for the gc command) holds the binding's lock.
	SkipInUseElsewhere = "in use by another process on the state directory (the provider serving it)"
)

// GC removes the containers and volumes carrying this instance's labels
// whose binding is gone (no state file, or a torn-down one) and, when
// olderThan > 0, those created more than olderThan ago whatever their
// binding (a binding that loses its resources this way reports
// resource_lost on its next execute; nothing is re-created). Resources of
// bindings with an execute, a setup, detach or teardown, or an allocation
// running are never touched, whether they run in this process or in
// another one on the state directory (the provider serving it, for the gc
// command; see fence): GC removes a binding's resources only once it has
// marked the binding as being collected and holds its lock, and an
// execute, detach or teardown that arrives meanwhile waits until GC is
// done with them. Resources without this instance's labels are never
// touched.
//
// The resources are listed before the bindings are read: a binding's
// state file is written before anything of it is created (the probe
// container of its setup, its allocation), so a resource the lists hold
// belongs to a binding the state directory already shows, unless that
// binding is gone. Reading the bindings first would take the resources
// a setup or allocation creates meanwhile for leftovers.
func (p *Provider) GC(ctx context.Context, olderThan time.Duration) (GCReport, error) {
	rep := GCReport{Containers: []string{}, Volumes: []string{}, Skipped: []GCSkip{}}
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
		if !live[key] {
			return true
		}
		if t, ok := createdAt(labels); ok {
			created = t
		}
		return olderThan > 0 && now.Sub(created) > olderThan
	}
	var keys []string
	byKey := map[string]*leftovers{}
	of := func(key string) *leftovers {
		if byKey[key] == nil {
			byKey[key] = &leftovers{}
			keys = append(keys, key)
		}
		return byKey[key]
	}
	for _, c := range cs {
		if doomed(c.Labels, time.Unix(c.Created, 0)) {
			l := of(c.Labels[LabelBinding])
			l.containers = append(l.containers, c)
		}
	}
	for _, v := range vs.Volumes {
		created, _ := time.Parse(time.RFC3339, v.CreatedAt)
		if doomed(v.Labels, created) {
			l := of(v.Labels[LabelBinding])
			l.volumes = append(l.volumes, v)
		}
	}
	var errs []error
	for _, key := range keys {
		done, ok := p.collect(key)
		if !ok {
			rep.Skipped = append(rep.Skipped, byKey[key].skip(key, SkipInUse))
			continue
		}
		// Another process on the state directory (the provider serving
		// it, for the gc command) may use the binding: its lock says so.
		release, err := p.fence.claim(key)
		if err != nil {
			if errors.Is(err, errFenceBusy) {
				rep.Skipped = append(rep.Skipped, byKey[key].skip(key, SkipInUseElsewhere))
			} else {
				errs = append(errs, err)
			}
			done()
			continue
		}
		errs = append(errs, p.removeLeftovers(ctx, byKey[key], &rep))
		release()
		done()
	}
	return rep, errors.Join(errs...)
}

// leftovers are the containers and volumes of one binding that GC removes.
type leftovers struct {
	containers []container.Summary
	volumes    []*volume.Volume
}

// skip answers l, left for reason, as the report says it.
func (l *leftovers) skip(key, reason string) GCSkip {
	s := GCSkip{Binding: key, Reason: reason, Containers: []string{}, Volumes: []string{}}
	for _, c := range l.containers {
		s.Containers = append(s.Containers, containerName(c))
	}
	for _, v := range l.volumes {
		s.Volumes = append(s.Volumes, v.Name)
	}
	return s
}

// containerName is c's name without its leading slash, or its ID.
func containerName(c container.Summary) string {
	if len(c.Names) > 0 {
		return c.Names[0][1:]
	}
	return c.ID
}

// removeLeftovers removes the containers, then the volumes, and records
// what it removed in rep.
func (p *Provider) removeLeftovers(ctx context.Context, l *leftovers, rep *GCReport) error {
	var errs []error
	for _, c := range l.containers {
		if err := removeContainer(ctx, p.cli, c.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		rep.Containers = append(rep.Containers, containerName(c))
	}
	for _, v := range l.volumes {
		if err := removeVolume(ctx, p.cli, v.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		rep.Volumes = append(rep.Volumes, v.Name)
	}
	return errors.Join(errs...)
}

// liveBindings reads the state directory (the truth even for another
// process on the same directory, such as the gc command): the bindings
// set up and not torn down.
func (p *Provider) liveBindings() (map[string]bool, error) {
	states, err := p.store.list()
	if err != nil {
		return nil, fmt.Errorf("docker: gc: %w (nothing removed)", err)
	}
	live := map[string]bool{}
	for _, st := range states {
		if st.Phase != phaseDeleted {
			live[st.Key] = true
		}
	}
	return live, nil
}

// collect marks the binding of key as being collected, so that no
// execute, detach or teardown starts there until done is called; ok is
// false, and nothing is marked, while an execute, a lifecycle operation,
// an allocation or another GC runs there. A key this process does not
// serve needs no mark: nothing of it runs here.
func (p *Provider) collect(key string) (done func(), ok bool) {
	p.mu.Lock()
	b := p.bindings[key]
	p.mu.Unlock()
	if b == nil {
		return func() {}, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.active) > 0 || b.settling || b.allocating != nil || b.owning != nil || b.collecting != nil {
		return nil, false
	}
	ch := make(chan struct{})
	b.collecting = ch
	return func() {
		b.mu.Lock()
		b.collecting = nil
		b.mu.Unlock()
		close(ch)
	}, true
}
