package conformance

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"
)

// T is what a case needs from its test. *testing.T satisfies it, and so
// does the recorder behind Check and RunCLI.
type T interface {
	Helper()
	Name() string
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Failed() bool
	Cleanup(func())
	Context() context.Context
}

var _ T = (*testing.T)(nil)

// Status is how a case ended.
type Status string

// Case statuses.
const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Result is the outcome of one case run by Check.
type Result struct {
	ID       string
	Status   Status
	Log      []string // messages in order: errors, skips and logs
	Duration time.Duration
}

// Report is the outcome of a Check run, in case order.
type Report struct {
	Results []Result
	// Duration is the wall time of the run: less than the sum of the
	// cases' durations when they ran in parallel.
	Duration time.Duration
}

// Failed returns the ids of the failed cases.
func (r Report) Failed() []string { return r.ids(Fail) }

// Skipped returns the ids of the skipped cases.
func (r Report) Skipped() []string { return r.ids(Skip) }

// Passed returns the ids of the passed cases.
func (r Report) Passed() []string { return r.ids(Pass) }

func (r Report) ids(s Status) []string {
	var out []string
	for _, res := range r.Results {
		if res.Status == s {
			out = append(out, res.ID)
		}
	}
	return out
}

// Run runs every case as a subtest of t named by its id. newTarget is
// called once per case, so every case sees a fresh provider when the
// factory starts one; it registers its own cleanup with t.Cleanup.
func Run(t *testing.T, newTarget func(t *testing.T) Target, opts *Options) {
	t.Helper()
	o := opts.normalized()
	for _, c := range selected(o) {
		t.Run(c.id, func(t *testing.T) {
			if !o.Serial {
				t.Parallel()
			}
			runCase(t, c, func(T) Target { return newTarget(t) }, o)
		})
	}
}

// Check runs every case with a recorder instead of *testing.T and reports
// the results; it never fails itself. newTarget is called once per case.
// Once ctx ends the cases not yet started are skipped, and a case that
// fails while it ends says the run was interrupted.
func Check(ctx context.Context, newTarget func(t T) Target, opts *Options) Report {
	o := opts.normalized()
	start := time.Now()
	cases := selected(o)
	results := make([]Result, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		run := func() {
			defer wg.Done()
			if err := context.Cause(ctx); err != nil {
				results[i] = Result{ID: c.id, Status: Skip, Log: []string{fmt.Sprintf("not run: the run was interrupted (%v)", err)}}
			} else {
				if o.OnStart != nil {
					o.OnStart(c.id)
				}
				results[i] = record(ctx, c.id, func(t T) { runCase(t, c, newTarget, o) })
				if err := context.Cause(ctx); err != nil && results[i].Status == Fail {
					// What the case saw fail may be the interruption:
					// say so first, where a summary shows it.
					results[i].Log = append([]string{fmt.Sprintf("the run was interrupted while this case ran (%v): its failures may be the interruption's, not the provider's", err)}, results[i].Log...)
				}
			}
			if o.OnResult != nil {
				o.OnResult(results[i])
			}
		}
		wg.Add(1)
		if o.Serial {
			run()
		} else {
			go run()
		}
	}
	wg.Wait()
	return Report{Results: results, Duration: time.Since(start)}
}

// selected is the cases Options.Run and Options.Skip select.
func selected(o Options) []testCase {
	var out []testCase
	for _, c := range cases {
		if len(o.Run) > 0 && !matchesAny(o.Run, c.id) {
			continue
		}
		if matchesAny(o.Skip, c.id) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// IDs lists the stable ids of every case, in run order.
func IDs() []string {
	out := make([]string, len(cases))
	for i, c := range cases {
		out[i] = c.id
	}
	return out
}

// recorder is a T that records messages; Fatalf and Skipf end the case's
// goroutine as they do for *testing.T.
type recorder struct {
	name   string
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	failed   bool
	skipped  bool
	log      []string
	cleanups []func()
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return r.name }

func (r *recorder) add(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, msg)
}

func (r *recorder) Logf(format string, args ...any) { r.add(fmt.Sprintf(format, args...)) }

func (r *recorder) Errorf(format string, args ...any) {
	r.add(fmt.Sprintf(format, args...))
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Skipf(format string, args ...any) {
	r.add(fmt.Sprintf(format, args...))
	r.mu.Lock()
	r.skipped = true
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *recorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *recorder) Context() context.Context { return r.ctx }

// guarded runs f on its own goroutine, turning a panic into a failure, and
// waits for it (Fatalf and Skipf end that goroutine).
func (r *recorder) guarded(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				r.Errorf("panic: %v\n%s", p, debug.Stack())
			}
		}()
		f()
	}()
	<-done
}

func record(ctx context.Context, id string, f func(T)) Result {
	r := &recorder{name: id}
	r.ctx, r.cancel = context.WithCancel(ctx)
	start := time.Now()
	r.guarded(func() { f(r) })
	r.cancel()
	for {
		r.mu.Lock()
		n := len(r.cleanups)
		if n == 0 {
			r.mu.Unlock()
			break
		}
		last := r.cleanups[n-1]
		r.cleanups = r.cleanups[:n-1]
		r.mu.Unlock()
		r.guarded(last)
	}
	res := Result{ID: id, Status: Pass, Log: r.log, Duration: time.Since(start)}
	switch {
	case r.failed:
		res.Status = Fail
	case r.skipped:
		res.Status = Skip
	}
	return res
}

// Summary formats results one line each: status, id, duration and the
// first message.
func Summary(results []Result) string {
	var b strings.Builder
	for _, r := range results {
		first := ""
		if len(r.Log) > 0 {
			first, _, _ = strings.Cut(r.Log[0], "\n")
		}
		fmt.Fprintf(&b, "%-4s  %-36s %8s  %s\n", strings.ToUpper(string(r.Status)), r.ID, r.Duration.Round(time.Millisecond), first)
	}
	return b.String()
}
