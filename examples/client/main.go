// Command client is a small program built on brain/client: it creates a
// session, sends one message, streams the session's events (live model
// output included) while the turn runs, and prints the transcript.
//
// Start Brain, then run the client against it:
//
//	go run ./brain/cmd/brain serve            # prints the URL and the token
//	BRAIN_TOKEN=... go run ./examples/client --message "hello"
//
// With the scripted model (the default) the message may be a script, e.g.
// --message '{"reply":"streamed words arrive live","stream":true,"delay_ms":200}'.
// For a hosted model pass --provider openai|openai_chat|anthropic,
// --model NAME and --api-key KEY (or BRAIN_MODEL_API_KEY). --end ends the
// session afterwards. A turn that fails, or is cancelled, still has its
// transcript printed; the client then exits 1 saying why on stderr.
// Interrupted (Ctrl-C, SIGTERM) or out of --timeout while its turn runs,
// the client cancels the turn in Brain before it exits 1, saying so (a
// second Ctrl-C stops it at once).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
	"github.com/brain-in-go/brain/examples/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// Once interrupted, the next signal stops the client at once, even
	// while it cancels its turn.
	context.AfterFunc(ctx, stop)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	cli.Exit("client", err)
}

type options struct {
	cli.Turn
	system string
	end    bool
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.Flags(fs, "hello")
	fs.StringVar(&o.system, "system", "", "the session's system prompt")
	fs.BoolVar(&o.end, "end", false, "end the session afterwards")
	if err := cli.Parse(fs, args); err != nil {
		return o, err
	}
	return o, o.Check()
}

// run creates a session, runs one turn while printing its events, and
// prints the transcript.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, o.Timeout, fmt.Errorf("gave up after --timeout %v", o.Timeout))
	defer cancel()
	c, err := client.New(o.URL, &client.Options{Token: o.Token})
	if err != nil {
		return err
	}
	defer c.Close()

	s, err := c.Sessions.Create(ctx, api.CreateSessionRequest{
		Model:  api.ModelConfig{Provider: o.Provider, Name: o.Model, APIKey: o.APIKey},
		System: o.system,
	})
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	fmt.Fprintf(stdout, "session %s (%s)\n", s.ID, s.Summary.Status)

	// Follow the session's events from the start. The first event proves
	// the stream is connected, so the turn is submitted only then and no
	// live output is missed.
	followCtx, stopFollow := context.WithCancel(ctx)
	defer stopFollow()
	events := make(chan api.Event)
	followErr := make(chan error, 1)
	go func() {
		defer close(events)
		for ev, err := range s.Events(followCtx, 0, client.Follow(), client.LiveFrames()) {
			if err != nil {
				followErr <- err
				return
			}
			select {
			case events <- ev:
			case <-followCtx.Done():
				return
			}
		}
	}()
	var receipt client.Receipt
	var turnErr error // the turn's failure, once it failed
	submitted, live := false, false
	// gaveUp answers the error of a run that ctx ended (an interrupt or
	// --timeout) before its turn did: a turn it submitted is cancelled
	// first, so that it does not go on in Brain.
	gaveUp := func() error {
		if !submitted {
			return context.Cause(ctx)
		}
		return cancelTurn(ctx, s)
	}
	for {
		var ev api.Event
		var ok bool
		select {
		case ev, ok = <-events:
		case <-ctx.Done():
			return gaveUp()
		}
		if !ok {
			if ctx.Err() != nil {
				return gaveUp()
			}
			select {
			case err := <-followErr:
				return fmt.Errorf("events: %w", err)
			default:
				return errors.New("the event stream ended before the turn did")
			}
		}
		if ev.Sequence == 0 && ev.EventType == api.LiveModelOutput {
			var frame struct {
				Delta string `json:"delta"`
			}
			if json.Unmarshal(ev.Data, &frame) == nil {
				if !live {
					fmt.Fprint(stdout, "  live: ")
					live = true
				}
				fmt.Fprint(stdout, frame.Delta)
			}
			continue
		}
		if live {
			fmt.Fprintln(stdout)
			live = false
		}
		fmt.Fprintf(stdout, "  [%d] %s\n", ev.Sequence, ev.EventType)
		if !submitted {
			submitted = true
			if receipt, err = s.Submit(ctx, api.UserInput{Message: o.Message}); err != nil {
				if ctx.Err() != nil {
					// The turn may have been admitted as ctx ended.
					return gaveUp()
				}
				return fmt.Errorf("submit: %w", err)
			}
			fmt.Fprintf(stdout, "> %s\n", o.Message)
			continue
		}
		if ev.Sequence > receipt.Sequence && (ev.EventType == api.KindTurnEnded || ev.EventType == api.KindTurnFailed) {
			if ev.EventType == api.KindTurnFailed {
				turnErr = turnFailed(ev.Data)
			}
			break
		}
	}
	stopFollow()

	tr, err := s.Transcript(ctx)
	if err != nil {
		return fmt.Errorf("transcript: %w", err)
	}
	fmt.Fprintln(stdout, "transcript:")
	for _, m := range tr.Messages {
		for _, b := range m.Content {
			fmt.Fprintf(stdout, "  %s: %s\n", m.Role, describe(b))
		}
	}
	if o.end {
		sum, err := s.End(ctx)
		if err != nil {
			return fmt.Errorf("end: %w", err)
		}
		fmt.Fprintf(stdout, "session %s\n", sum.Status)
	}
	return turnErr
}

// cancelTimeout bounds the cancel of a turn the client gave up on.
const cancelTimeout = 15 * time.Second

// cancelTurn cancels the running turn of session s, which the client
// submitted, once ctx ended, and answers the error the client exits with:
// why ctx ended, and whether the turn was cancelled.
func cancelTurn(ctx context.Context, s *client.Session) error {
	cause := context.Cause(ctx)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	if err := s.Interrupt(cctx); err != nil {
		return fmt.Errorf("%w; cancelling the turn failed, it may still run in session %s: %w", cause, s.ID, err)
	}
	return fmt.Errorf("%w: cancelled the turn of session %s", cause, s.ID)
}

// turnFailed answers the error of a turn that failed with the payload
// data: a cancelled turn says it was cancelled, any other says it failed,
// each with the failure's code and message.
func turnFailed(data json.RawMessage) error {
	var f api.Failure
	if err := json.Unmarshal(data, &f); err != nil || f.Code == "" {
		return fmt.Errorf("turn failed: %s", data)
	}
	what := "failed"
	if f.Code == api.FailureCancelled {
		what = "was cancelled"
	}
	if f.Message == "" {
		return fmt.Errorf("turn %s (%s)", what, f.Code)
	}
	return fmt.Errorf("turn %s (%s): %s", what, f.Code, f.Message)
}

// describe renders one content block on a line.
func describe(b api.ContentBlock) string {
	switch b.Type {
	case api.BlockText:
		return b.Text
	case api.BlockToolUse:
		return fmt.Sprintf("[tool_use %s %s %s]", b.ID, b.Name, b.Input)
	case api.BlockToolResult:
		return fmt.Sprintf("[tool_result %s %s]", b.ToolUseID, b.Content)
	case api.BlockImage, api.BlockFile:
		return fmt.Sprintf("[%s %s]", b.Type, b.URL)
	case api.BlockNative:
		return fmt.Sprintf("[native %s, %d bytes]", b.Format, len(b.Data))
	}
	return "[" + strings.TrimSpace(b.Type) + "]"
}
