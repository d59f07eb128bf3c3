// Command tool is the test Tool of the loophost tests: its input names
// what it does.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/tool"
)

type input struct {
	Op      string `json:"op"`
	Path    string `json:"path"`
	Content string `json:"content"`
	Bytes   int    `json:"bytes"`
	Ms      int    `json:"ms"`
	// Wait makes fill and entries create <path>.filling first, rename it
	// to <path>.filled once they have written and then wait for <path>.go
	// before they answer.
	Wait bool `json:"wait"`
	// Remove is how many entries entries removes before it creates more.
	Remove int `json:"remove"`
}

func init() { tool.Export(run) }

func main() {}

var keep [][]byte

func run(ctx context.Context, svc tool.Services, inv tool.Invocation) (api.Outcome, error) {
	var in input
	if err := json.Unmarshal(inv.Input, &in); err != nil {
		return api.Outcome{}, err
	}
	str := func(s string) api.Outcome {
		b, _ := json.Marshal(s)
		return tool.OK(b)
	}
	switch in.Op {
	case "echo":
		return tool.OK(inv.Input), nil
	case "invocation":
		b, _ := json.Marshal(map[string]any{"configuration": inv.Configuration, "deadline_at_ms": inv.DeadlineAtMs})
		return tool.OK(b), nil
	case "read":
		b, err := os.ReadFile(in.Path)
		if err != nil {
			return tool.Error("read_failed", err.Error()), nil
		}
		return str(string(b)), nil
	case "write":
		if err := os.WriteFile(in.Path, []byte(in.Content), 0o600); err != nil {
			return tool.Error("write_failed", err.Error()), nil
		}
		return str("written"), nil
	case "list":
		entries, err := os.ReadDir(in.Path)
		if err != nil {
			return tool.Error("list_failed", err.Error()), nil
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return str(strings.Join(names, ",")), nil
	case "emit":
		seq, err := svc.Emit(ctx, "test.note", json.RawMessage(`{"n":1}`))
		if err != nil {
			return api.Outcome{}, err
		}
		return tool.OK(json.RawMessage(fmt.Sprint(seq))), nil
	case "forbidden":
		// A reserved event name is refused by the engine.
		_, err := svc.Emit(ctx, "tool_call_ended", json.RawMessage(`{}`))
		return api.Outcome{}, err
	case "finish":
		o := str("finished")
		if _, err := svc.Finish(ctx, &o); err != nil {
			return api.Outcome{}, err
		}
		return str("ignored"), nil
	case "fail":
		return api.Outcome{}, errors.New("the tool failed")
	case "fail-long":
		// A refused service call, returned with in.Bytes of context.
		_, err := svc.Emit(ctx, "tool_call_ended", json.RawMessage(`{}`))
		return api.Outcome{}, fmt.Errorf("giving up %s: %w", strings.Repeat("x", in.Bytes), err)
	case "panic":
		panic("tool panic")
	case "exit":
		os.Exit(3)
	case "deadlock":
		select {}
	case "loop":
		n := 0
		for {
			n++
		}
	case "mark":
		// Leave a mark, then run until stopped.
		f, err := os.OpenFile(in.Path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return tool.Error("mark_failed", err.Error()), nil
		}
		_, _ = f.Write([]byte(in.Content + "\n"))
		_ = f.Close()
		for {
		}
	case "sleep":
		deadline := time.Now().Add(time.Duration(in.Ms) * time.Millisecond)
		for time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		return str("slept"), nil
	case "large":
		return str(strings.Repeat("x", in.Bytes)), nil
	case "grow":
		for {
			keep = append(keep, make([]byte, 1<<20))
		}
	case "fill":
		// Write bytes to path in chunks of 64 KiB.
		if in.Wait {
			if err := os.WriteFile(in.Path+".filling", nil, 0o600); err != nil {
				return tool.Error("wait_failed", err.Error()), nil
			}
		}
		err := fill(in.Path, in.Bytes)
		if in.Wait {
			if err := await(in.Path); err != nil {
				return tool.Error("wait_failed", err.Error()), nil
			}
		}
		if err != nil {
			return tool.Error("write_failed", err.Error()), nil
		}
		return str("filled"), nil
	case "refill":
		// Fill path, remove it and fill it again.
		if err := fill(in.Path, in.Bytes); err != nil {
			return tool.Error("write_failed", err.Error()), nil
		}
		if err := os.Remove(in.Path); err != nil {
			return tool.Error("remove_failed", err.Error()), nil
		}
		if err := fill(in.Path, in.Bytes); err != nil {
			return tool.Error("write_failed", err.Error()), nil
		}
		return str("refilled"), nil
	case "rewrite":
		// Fill path twice: the second fill truncates the first.
		for range 2 {
			if err := fill(in.Path, in.Bytes); err != nil {
				return tool.Error("write_failed", err.Error()), nil
			}
		}
		return str("rewritten"), nil
	case "orphan":
		// Write bytes to path, remove it and write bytes more through the
		// same open file; then close it and fill <path>2.
		f, err := os.Create(in.Path)
		if err != nil {
			return tool.Error("write_failed", err.Error()), nil
		}
		chunk := make([]byte, in.Bytes)
		if _, err := f.Write(chunk); err != nil {
			return tool.Error("write_failed", err.Error()), nil
		}
		if err := os.Remove(in.Path); err != nil {
			return tool.Error("remove_failed", err.Error()), nil
		}
		_, open := f.Write(chunk)
		_ = f.Close()
		closed := fill(in.Path+"2", in.Bytes)
		return str(fmt.Sprintf("open: %v; closed: %v", open, closed)), nil
	case "truncate":
		// Create path and set its size to bytes.
		f, err := os.Create(in.Path)
		if err == nil {
			err = f.Truncate(int64(in.Bytes))
			_ = f.Close()
		}
		if err != nil {
			return tool.Error("write_failed", err.Error()), nil
		}
		return str("truncated"), nil
	case "pwrite":
		// Create path and write one byte at offset bytes.
		f, err := os.Create(in.Path)
		if err == nil {
			_, err = f.WriteAt([]byte("x"), int64(in.Bytes))
			_ = f.Close()
		}
		if err != nil {
			return tool.Error("write_failed", err.Error()), nil
		}
		return str("written"), nil
	case "entries":
		// Create the entries <path>0, <path>1, ... (directories when
		// content is "dir", empty files otherwise) until one fails or
		// bytes of them exist; then remove remove of them (of files every
		// other one by renaming it onto the last one created), and create
		// more the same way.
		if in.Wait {
			if err := os.WriteFile(in.Path+".filling", nil, 0o600); err != nil {
				return tool.Error("wait_failed", err.Error()), nil
			}
		}
		create := func(i int) error {
			name := fmt.Sprint(in.Path, i)
			if in.Content == "dir" {
				return os.Mkdir(name, 0o700)
			}
			f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o600)
			if err != nil {
				return err
			}
			return f.Close()
		}
		var first error
		n := 0
		for ; n < in.Bytes; n++ {
			if first = create(n); first != nil {
				break
			}
		}
		created := n
		if in.Wait {
			if err := await(in.Path); err != nil {
				return tool.Error("wait_failed", err.Error()), nil
			}
		}
		for i := range in.Remove {
			var err error
			if i%2 == 0 || in.Content == "dir" {
				err = os.Remove(fmt.Sprint(in.Path, i))
			} else {
				err = os.Rename(fmt.Sprint(in.Path, i), fmt.Sprint(in.Path, created-1))
			}
			if err != nil {
				return tool.Error("remove_failed", err.Error()), nil
			}
		}
		var again error
		for ; n < created+in.Bytes; n++ {
			if again = create(n); again != nil {
				break
			}
		}
		return str(fmt.Sprintf("created %d: %v; created %d: %v", created, first, n-created, again)), nil
	case "hold":
		// Open path bytes times, keeping every file open; then close
		// them all and open it once more.
		var held []*os.File
		var first error
		for len(held) < in.Bytes {
			f, err := os.Open(in.Path)
			if err != nil {
				first = err
				break
			}
			held = append(held, f)
		}
		n := len(held)
		for _, f := range held {
			_ = f.Close()
		}
		f, again := os.Open(in.Path)
		if again == nil {
			_ = f.Close()
		}
		return str(fmt.Sprintf("opened %d: %v; again: %v", n, first, again)), nil
	case "random":
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		return str(hex.EncodeToString(b)), nil
	case "now":
		b, _ := json.Marshal(time.Now().UnixMilli())
		return tool.OK(b), nil
	case "bad":
		return api.Outcome{Status: "weird"}, nil
	case "leak":
		// Read the secret file at path and quote it everywhere: after
		// bytes bytes of padding on stderr and stdout, in an event, in
		// telemetry, and in the answer content names ("ok": an outcome
		// holding it, "outcome": an error outcome, "error": an error
		// after bytes bytes of padding, "panic": a panic).
		b, err := os.ReadFile(in.Path)
		if err != nil {
			return tool.Error("read_failed", err.Error()), nil
		}
		secret := strings.TrimSpace(string(b))
		pad := strings.Repeat("p", in.Bytes)
		fmt.Fprintf(os.Stderr, "%s%s\n", pad, secret)
		fmt.Printf("%s%s %q\n", pad, secret, b)
		data, _ := json.Marshal(map[string]string{"secret": secret, "raw": string(b)})
		if _, err := svc.Emit(ctx, "test.leak", data); err != nil {
			return api.Outcome{}, err
		}
		if err := svc.Telemetry(ctx, data); err != nil {
			return api.Outcome{}, err
		}
		switch in.Content {
		case "ok":
			return tool.OK(data), nil
		case "outcome":
			return tool.Error("leaked", "refused "+secret), nil
		case "error":
			return api.Outcome{}, fmt.Errorf("%s%s", pad, secret)
		case "panic":
			panic("leaked " + secret)
		}
	}
	return tool.Error("unknown_op", in.Op), nil
}

// await renames <path>.filling to <path>.filled and waits for <path>.go.
func await(path string) error {
	if err := os.Rename(path+".filling", path+".filled"); err != nil {
		return err
	}
	for {
		if _, err := os.Stat(path + ".go"); err == nil {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
}

// fill writes n bytes to a new file at path, 64 KiB at a time.
func fill(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	chunk := make([]byte, 64<<10)
	for n > 0 {
		c := chunk[:min(n, len(chunk))]
		if _, err := f.Write(c); err != nil {
			_ = f.Close()
			return err
		}
		n -= len(c)
	}
	return f.Close()
}
