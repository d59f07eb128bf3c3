package loophost

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/brain-in-go/brain/brain/internal/envbind"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Bounds of the secret files read for redaction: a secret is a
// credential, and a larger file, or one past the count, is not taken as
// one.
const (
	maxSecretFileBytes = 64 << 10
	maxSecretFiles     = 1024
)

// hidden are the contents of the secret files an invocation was granted,
// removed from what the host records or emits of it: its answer (the
// outcome, or its error's message), the head of its stderr in its
// failure, its captured stdout and stderr (Options.Output) and the input
// of its service calls, whose events, results and telemetry are journaled
// or logged. A Tool reads a secret to use it; quoted by accident, it
// would reach the journal, the events and every reader of them. Each
// secret is removed as envbind removes an environment's credential from
// a provider's answer, as its bytes and as Go quotes it, and also without
// the white space around it (a file usually ends with a newline a Tool
// trims). A file of white space only is no secret.
type hidden []string

// grantedSecrets reads the regular files under the secret directories g
// grants (symbolic links are not followed; the files they name inside the
// directory are read as themselves). A file that cannot be read is one
// the Tool cannot read either.
func (h *Host) grantedSecrets(g *Grants) hidden {
	if g == nil {
		return nil
	}
	var out hidden
	add := func(v string) {
		for _, have := range out {
			if have == v {
				return
			}
		}
		out = append(out, v)
	}
	files := 0
	for _, name := range g.Secrets {
		dir, ok := h.opts.SecretAllow[name]
		if !ok {
			continue
		}
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			if files++; files > maxSecretFiles {
				return filepath.SkipAll
			}
			if fi, err := d.Info(); err != nil || fi.Size() > maxSecretFileBytes {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil || len(b) > maxSecretFileBytes {
				return nil
			}
			v := string(b)
			t := strings.TrimSpace(v)
			if t == "" {
				return nil
			}
			add(v)
			if t != v {
				add(t)
			}
			return nil
		})
	}
	return out
}

// string answers s with every secret removed.
func (s hidden) string(v string) string {
	if len(s) == 0 {
		return v
	}
	return envbind.RedactString(v, s...)
}

// json answers raw with every secret removed from its strings.
func (s hidden) json(raw json.RawMessage) json.RawMessage {
	if len(s) == 0 {
		return raw
	}
	return envbind.RedactJSON(raw, s...)
}

// receipt answers rc with every secret removed from what it carries.
func (s hidden) receipt(rc envapi.Receipt) envapi.Receipt {
	if len(s) == 0 {
		return rc
	}
	rc.Message = s.string(rc.Message)
	rc.Details = s.json(rc.Details)
	rc.Data = s.json(rc.Data)
	rc.Output = s.json(rc.Output)
	return rc
}

// clip answers the head of v of at most n bytes (clip) with every secret
// removed first, so that a secret the cut would halve is not left in
// part. cut says that v is itself the head of more: then, as when clip
// cuts, an end of the answer that begins a secret (at least four bytes
// of it, all but its last byte for a shorter one) is removed too.
func (s hidden) clip(v string, n int, cut bool) string {
	v = s.string(v)
	c := clip(v, n)
	if len(c) < len(v) {
		cut = true
	}
	if cut {
		c = s.trimPartial(c)
	}
	return c
}

// output answers the bytes a capture kept with every secret removed.
func (s hidden) output(c *capture) []byte {
	b := c.Bytes()
	if len(s) == 0 || len(b) == 0 {
		return b
	}
	v := s.string(string(b))
	if c.dropped > 0 {
		v = s.trimPartial(v)
	}
	return []byte(v)
}

// trimPartial replaces an end of v that begins a secret, as a cut leaves
// it, by the mark of a removed secret.
func (s hidden) trimPartial(v string) string {
	for _, secret := range s {
		for _, form := range []string{secret, quotedForm(secret)} {
			least := min(4, len(form)-1)
			for k := min(len(form)-1, len(v)); k >= least && k > 0; k-- {
				if strings.HasSuffix(v, form[:k]) {
					return v[:len(v)-k] + envbind.Redacted
				}
			}
		}
	}
	return v
}

// quotedForm answers v as it reads between the quotes of strconv.Quote.
func quotedForm(v string) string {
	q := strconv.Quote(v)
	return q[1 : len(q)-1]
}
