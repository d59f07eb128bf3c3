// Command host serves tools from this Go program, with no environment
// service to deploy: it registers a host with Brain, serves two tools over
// the host connection, creates a session that uses them, sends one
// message and prints the transcript.
//
//	go run ./brain/cmd/brain serve            # prints the URL and the token
//	BRAIN_TOKEN=... go run ./examples/host
//
// The tools are "add" (adds two numbers at once) and "countdown" (counts
// down for a number of seconds, emitting a progress event per second, and
// stops as soon as its context ends: at its deadline, when the session is
// interrupted, or when this program closes its client). With the scripted
// model (the default) the message is a script that calls both; for a
// hosted model pass --provider, --model and --api-key and a message in
// words.
//
// SIGINT or SIGTERM interrupts the session's turn and exits 1; a second
// one quits at once, without waiting for Brain to accept the interrupt
// (Brain then records the call it lost as unknown). A command line it
// cannot run exits 2.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
	"github.com/brain-in-go/brain/examples/internal/cli"
)

const defaultMessage = `{"tool_calls":[{"name":"add","input":{"a":2,"b":3}},{"name":"countdown","input":{"seconds":2}}]}`

func main() {
	ctx, stop := cli.Signals("host")
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	cli.Exit("host", err)
}

type options struct{ cli.Turn }

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("host", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.Flags(fs, defaultMessage)
	if err := cli.Parse(fs, args); err != nil {
		return o, err
	}
	return o, o.Check()
}

// add adds two numbers.
func add(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
	var in struct{ A, B float64 }
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return client.Fail("invalid_input", err.Error()), nil
	}
	return client.OK(map[string]float64{"sum": in.A + in.B}), nil
}

// countdown counts down, one progress event per second, until done or
// until its context ends.
func countdown(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
	var in struct{ Seconds int }
	if err := json.Unmarshal(call.Input, &in); err != nil || in.Seconds < 0 || in.Seconds > 3600 {
		return client.Fail("invalid_input", "seconds must be between 0 and 3600"), nil
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for left := in.Seconds; left > 0; left-- {
		if _, err := call.Emit(ctx, "countdown", map[string]int{"left": left}); err != nil {
			return api.Outcome{}, err
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			// Brain has closed the call already (timeout or cancelled);
			// whatever is returned now is not posted.
			return api.Outcome{}, context.Cause(ctx)
		}
	}
	return client.OK("liftoff"), nil
}

var tools = []api.Tool{
	{Name: "add", Description: "Adds two numbers a and b.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
	{Name: "countdown", Description: "Counts down for the given number of seconds.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"integer","minimum":0,"maximum":3600}},"required":["seconds"]}`)},
}

// run registers the host, serves the tools, runs one turn that may call
// them and prints the transcript.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	c, err := client.New(o.URL, &client.Options{Token: o.Token})
	if err != nil {
		return err
	}
	// Closing the client ends the host connection and cancels any tool
	// still running; the session itself stays.
	defer c.Close()

	host, err := c.Host(ctx)
	if err != nil {
		return fmt.Errorf("register host: %w", err)
	}
	host.Handle("add", add)
	host.Handle("countdown", countdown)
	if err := host.Connected(ctx); err != nil {
		return fmt.Errorf("connect host: %w", err)
	}
	fmt.Fprintf(stdout, "host %s connected\n", host.ID)

	req := api.CreateSessionRequest{
		Model:        api.ModelConfig{Provider: o.Provider, Name: o.Model, APIKey: o.APIKey},
		Environments: []api.Environment{host.Environment("local")},
	}
	for _, t := range tools {
		t.Placements = map[string]api.Placement{"local": {Implementation: json.RawMessage(`{}`)}}
		req.Tools = append(req.Tools, t)
	}
	s, err := c.Sessions.Create(ctx, req)
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	fmt.Fprintf(stdout, "session %s\n> %s\n", s.ID, o.Message)
	if _, err := s.Send(ctx, api.UserInput{Message: o.Message}); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	for ev, err := range s.Events(ctx, 0) {
		if err != nil {
			return err
		}
		if !strings.HasPrefix(ev.EventType, "tool_") && ev.EventType != "countdown" {
			continue
		}
		origin := ""
		if ev.Origin != nil {
			origin = fmt.Sprintf(" (from %s %d)", ev.Origin.Kind, ev.Origin.Sequence)
		}
		fmt.Fprintf(stdout, "  [%d] %s %s%s\n", ev.Sequence, ev.EventType, ev.Data, origin)
	}
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
	return nil
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
	}
	return "[" + b.Type + "]"
}
