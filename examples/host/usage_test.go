package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestUsageHidesCredentials: "host -help", and the usage printed after
// a mistyped flag, list every flag with its default; the token and the
// model key may come from the environment, and their values must not be
// printed to a terminal or a CI log. They still take effect.
func TestUsageHidesCredentials(t *testing.T) {
	const token, key = "sekrit-operator-token", "sekrit-model-key"
	t.Setenv("BRAIN_TOKEN", token)
	t.Setenv("BRAIN_MODEL_API_KEY", key)
	for _, args := range [][]string{{"-help"}, {"--no-such-flag"}} {
		var out bytes.Buffer
		if _, err := parse(args, &out); err == nil {
			t.Fatalf("%v: parsed", args)
		}
		if !strings.Contains(out.String(), "BRAIN_TOKEN") || !strings.Contains(out.String(), "BRAIN_MODEL_API_KEY") {
			t.Fatalf("%v: no usage printed:\n%s", args, out.String())
		}
		if strings.Contains(out.String(), "sekrit") {
			t.Errorf("%v: the usage shows a credential:\n%s", args, out.String())
		}
	}
	o, err := parse(nil, io.Discard)
	if err != nil || o.token != token || o.apiKey != key {
		t.Errorf("from the environment: token %q, key %q, %v", o.token, o.apiKey, err)
	}
	o, err = parse([]string{"--token", "flag-token", "--api-key", "flag-key"}, io.Discard)
	if err != nil || o.token != "flag-token" || o.apiKey != "flag-key" {
		t.Errorf("flags over the environment: token %q, key %q, %v", o.token, o.apiKey, err)
	}
}
