package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"
)

// Turn is the command line of an example that runs a turn on Brain: where
// Brain is and its token, the session's model, the message to send and
// how long to wait for it all.
type Turn struct {
	URL, Token, Provider, Model, APIKey, Message string
	Timeout                                      time.Duration
}

// Flags adds Turn's flags to fs, the message defaulting to message. The
// credentials are read from the environment by Check, after parsing, so
// that the usage, which shows every flag's default, never shows them.
func (t *Turn) Flags(fs *flag.FlagSet, message string) {
	fs.StringVar(&t.URL, "url", envOr("BRAIN_URL", "http://127.0.0.1:8080"), "Brain's base URL (BRAIN_URL)")
	fs.StringVar(&t.Token, "token", "", "Brain's bearer token (default: BRAIN_TOKEN)")
	fs.StringVar(&t.Provider, "provider", "scripted", "model provider: scripted, openai, openai_chat or anthropic")
	fs.StringVar(&t.Model, "model", "demo", "model name")
	fs.StringVar(&t.APIKey, "api-key", "", "the model provider's API key (default: BRAIN_MODEL_API_KEY)")
	fs.StringVar(&t.Message, "message", message, "the message to send")
	fs.DurationVar(&t.Timeout, "timeout", 5*time.Minute, "give up after this long")
}

// Check refuses, before a session is created for a turn that could not
// run, no time to run it in, no message to send and a --url that is no
// base URL; it then takes the credentials not given as flags from
// BRAIN_TOKEN and BRAIN_MODEL_API_KEY.
func (t *Turn) Check() error {
	if t.Timeout <= 0 {
		return UsageError{Err: fmt.Errorf("--timeout %v: want a positive duration, such as 30s or 5m", t.Timeout)}
	}
	if t.Message == "" {
		return UsageError{Err: errors.New("--message is empty: give the message to send")}
	}
	if err := BaseURL("--url", t.URL); err != nil {
		return err
	}
	if t.Token == "" {
		t.Token = os.Getenv("BRAIN_TOKEN")
	}
	if t.APIKey == "" {
		t.APIKey = os.Getenv("BRAIN_MODEL_API_KEY")
	}
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
