package main

import (
	"flag"
	"io"
	"log/slog"
	"testing"

	"github.com/brain-in-go/brain/brain"
)

// TestTelemetryVariablesReachConfig: the BRAIN_TELEMETRY_* variables and
// flags become Config.Telemetry, flags winning, and a bad value is
// refused naming the variable.
func TestTelemetryVariablesReachConfig(t *testing.T) {
	env := map[string]string{
		"BRAIN_TELEMETRY_FILE":             "/var/log/brain/telemetry.jsonl",
		"BRAIN_TELEMETRY_MAX_RECORD_BYTES": "2048",
		"BRAIN_TELEMETRY_SESSION_RATE":     "7",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	var f serveFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	if err := f.register(fs, lookup); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--telemetry-rate", "90", "--telemetry-max-file-bytes", "1048576"}); err != nil {
		t.Fatal(err)
	}
	got := f.config(slog.New(slog.NewTextHandler(io.Discard, nil)), "").Telemetry
	want := brain.Telemetry{File: "/var/log/brain/telemetry.jsonl", MaxRecordBytes: 2048, MaxFileBytes: 1 << 20, SessionRate: 7, Rate: 90}
	if got != want {
		t.Errorf("Config.Telemetry = %+v, want %+v", got, want)
	}
	env["BRAIN_TELEMETRY_RATE"] = "lots"
	var g serveFlags
	if err := g.register(flag.NewFlagSet("serve", flag.ContinueOnError), lookup); err == nil {
		t.Error("BRAIN_TELEMETRY_RATE=lots was accepted")
	}
}
