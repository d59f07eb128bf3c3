package docker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A command stopped (by its deadline or a cancel) after its container was
// removed out of band (docker rm -f) answers at once: the kill finds the
// container gone, so nothing of the command runs any more, and it does
// not spend the kill's budget asking again. The Engine's answer to the
// command's exec start is held, so that the stop, not the end of the
// stream, ends the execute. A cancel, a teardown and an execute that come
// after answer promptly too.
func TestStopInRemovedContainerAnswersAtOnce(t *testing.T) {
	t.Parallel()
	for _, by := range []string{"deadline", "cancel"} {
		t.Run(by, func(t *testing.T) {
			t.Parallel()
			real, _ := testEngine(t)
			proxy := newStoppingProxy(t, real, "")
			h := proxiedHarness(t, proxy.ln.Addr().String())
			c := h.commands()
			ctr := h.allocated(c)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			proxy.hold.Store(true)
			var deadline *int64
			if by == "deadline" {
				deadline = envtest.Millis(2000)
			}
			seq := c.Reserve()
			posted := time.Now()
			answered := h.postAsync(c.At(seq, envapi.Execute(tool(toolset.ToolCommand),
				mustJSON(toolset.CommandInput{Shell: "sleep 60"}), deadline, nil)))
			for proxy.hold.Load() {
				if time.Since(posted) > time.Second {
					t.Fatal("the command's exec start never reached the Engine")
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := removeContainer(ctx, real, ctr); err != nil {
				t.Fatal(err)
			}
			stopped := posted.Add(2 * time.Second)
			want := envapi.CodeTimeout
			if by == "cancel" {
				if r := h.post(c.Cancel(seq)); r.Type != envapi.ReceiptAccepted {
					t.Fatalf("cancel = %+v", r)
				}
				stopped, want = time.Now(), envapi.CodeCancelled
			}
			r := <-answered
			if took := time.Since(stopped); took > killBudget/2 {
				t.Fatalf("the execute answered %s after its stop, in a container removed before", took)
			}
			failure(t, r, want)
			if strings.Contains(string(r.Details), "cleanup_error") {
				t.Fatalf("a stop in a removed container reports a failed cleanup: %s", r.Details)
			}

			prompt := func(what string, cmd envapi.Command, want envapi.ReceiptType, code string) {
				t.Helper()
				start := time.Now()
				r := h.post(cmd)
				if took := time.Since(start); took > killBudget/2 {
					t.Fatalf("%s after the removal took %s", what, took)
				}
				if r.Type != want || r.Code != code {
					t.Fatalf("%s after the removal = %+v, want %s %s", what, r, want, code)
				}
			}
			prompt("a cancel", c.Cancel(seq), envapi.ReceiptAccepted, "")
			prompt("an execute", c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "true"}), nil),
				envapi.ReceiptFailure, envapi.CodeResourceLost)
			prompt("a teardown", c.Teardown(), envapi.ReceiptAccepted, "")
		})
	}
}
