package envsdk_test

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// reporterKeeper keeps the reporter of its setup for after the setup
// returned, as a provider's controller does.
type reporterKeeper struct {
	envsdk.Base
	kept chan *envsdk.Reporter
}

func (k *reporterKeeper) Setup(c *envsdk.Ctx) (envsdk.SetupResult, error) {
	k.kept <- c.Reporter()
	return envsdk.SetupResult{}, nil
}

// A kept Reporter is used from many goroutines at once, while the server
// that handed it out stops: every report is delivered once, with its own
// committed sequence, and none is lost or sent twice.
func TestKeptReporterIsSafeConcurrently(t *testing.T) {
	b := envtest.NewBrain(t)
	k := &reporterKeeper{kept: make(chan *envsdk.Reporter, 1)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- envsdk.Serve(ctx, ln, envsdk.NewHandler(k, &envsdk.Options{Token: token})) }()
	cmds := envtest.NewCommands("ses_1", "env")
	cmds.Brain = b
	if _, _, r, err := envtest.Post(context.Background(), nil, "http://"+ln.Addr().String(), token, cmds.Setup(nil)); err != nil || r.Receipt.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup = %+v, %v", r, err)
	}
	rep := <-k.kept

	const workers, each = 8, 12
	var mu sync.Mutex
	seqs := map[uint64]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				var seq uint64
				var err error
				if (w+i)%2 == 0 {
					seq, err = rep.Event(context.Background(), "probe", map[string]int{"w": w, "i": i})
				} else {
					seq, err = rep.Result(context.Background(), envapi.Observation{Scope: envapi.ScopeResource,
						Resource: "disk", Code: "lost", Message: "gone"}, nil)
				}
				if err != nil {
					errs <- err
					continue
				}
				mu.Lock()
				if seqs[seq] {
					errs <- &envsdk.CallError{Method: "reporter", Status: 200, Message: "sequence answered twice"}
				}
				seqs[seq] = true
				mu.Unlock()
			}
		}()
		if w == workers/2 {
			stop() // the server stops while reports are on their way
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	got := b.Count(envtest.Method(envtest.MethodReporter))
	if got != workers*each || len(seqs) != workers*each {
		t.Fatalf("Brain got %d reports with %d distinct sequences, want %d of each", got, len(seqs), workers*each)
	}
}
