package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

// TestHelpNamesEveryValueKind: "brain serve --help" shows each flag that
// takes a value with the kind it takes (string, int), as the flag package
// does for its own flags; none is shown with the word "value", which
// tells the operator nothing about what to write.
func TestHelpNamesEveryValueKind(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := serve(t.Context(), []string{"--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("--help: exit %d, stderr %q", code, stderr.String())
	}
	help := stdout.String()
	var f serveFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	_ = f.register(fs, func(string) (string, bool) { return "", false })
	fs.VisitAll(func(fl *flag.Flag) {
		if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			if !strings.Contains(help, "  -"+fl.Name+"\n") {
				t.Errorf("switch -%s is not listed on a line of its own", fl.Name)
			}
			return
		}
		if !strings.Contains(help, "  -"+fl.Name+" string\n") && !strings.Contains(help, "  -"+fl.Name+" int\n") {
			t.Errorf("-%s is not listed with the kind of value it takes:\n%s", fl.Name, help)
		}
	})
}

// TestHelpNamesEveryOTLPVariable: the usage names every OpenTelemetry
// variable "brain serve" reads, or the family it belongs to: the
// per-signal OTEL_EXPORTER_OTLP_LOGS_* settings of the telemetry records
// were read but not mentioned.
func TestHelpNamesEveryOTLPVariable(t *testing.T) {
	var read []string
	_, _ = otlpFromEnv(func(name string) (string, bool) {
		read = append(read, name)
		return "", false
	})
	if len(read) == 0 {
		t.Fatal("otlpFromEnv reads no variable")
	}
	for _, name := range read {
		prefix, suffix := name, ""
		for _, p := range []string{"OTEL_EXPORTER_OTLP_TRACES_", "OTEL_EXPORTER_OTLP_LOGS_", "OTEL_EXPORTER_OTLP_"} {
			if rest, ok := strings.CutPrefix(name, p); ok {
				prefix, suffix = p, rest
				break
			}
		}
		named := strings.Contains(serveUsage, name) ||
			(suffix != "" && strings.Contains(serveUsage, "_"+suffix) && (prefix == "OTEL_EXPORTER_OTLP_" || strings.Contains(serveUsage, prefix+"*")))
		if !named {
			t.Errorf("the usage does not name %s", name)
		}
	}
}

// TestHelpHidesURLCredentials: "brain serve --help" shows a URL setting's
// variable as the flag's default, but never a credential it carries in
// its user information or its query: a help text ends up in terminals
// and issue reports.
func TestHelpHidesURLCredentials(t *testing.T) {
	vars := map[string]string{
		"BRAIN_PUBLIC_URL":           "https://brain:pubZq7K1@brain.example/base?token=pubZq7K2",
		"BRAIN_OPENAI_BASE_URL":      "https://oaiZq7K3@proxy.example/v1",
		"BRAIN_ANTHROPIC_BASE_URL":   "https://u:antZq7K4@proxy.example/v1#antZq7K5",
		"BRAIN_ENVIRONMENT_BASE_URL": "http://u:envZq7K6@[::1/x",
	}
	for k, v := range vars {
		t.Setenv(k, v)
	}
	var stdout, stderr bytes.Buffer
	if code := serve(t.Context(), []string{"--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("--help: exit %d, stderr %q", code, stderr.String())
	}
	help := stdout.String()
	if strings.Contains(help, "Zq7K") {
		t.Errorf("--help shows a credential of a URL variable:\n%s", help)
	}
	for _, host := range []string{"brain.example/base", "proxy.example/v1"} {
		if !strings.Contains(help, host) {
			t.Errorf("--help does not show the URL of %s", host)
		}
	}
}
