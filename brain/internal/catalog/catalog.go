package catalog

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/internal/fsutil"
	"github.com/brain-in-go/brain/internal/netutil"
)

// Dialects a provider may speak. DialectScripted is the offline model's
// and only the snapshot has it.
const (
	DialectOpenAIResponses = "openai_responses"
	DialectOpenAIChat      = "openai_chat_completions"
	DialectAnthropic       = "anthropic_messages"
	DialectScripted        = "scripted"
)

// Bounds of a providers file.
const (
	MaxFileBytes = 1 << 20
	MaxModels    = 10000
)

// ErrInvalid marks a providers file that is malformed or breaks a rule.
var ErrInvalid = errors.New("catalog: invalid providers file")

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// File is the providers file (and the embedded snapshot).
type File struct {
	Providers []FileProvider `json:"providers"`
}

// FileProvider is one provider of a providers file.
type FileProvider struct {
	Name    string  `json:"name"`
	Dialect string  `json:"dialect"`
	BaseURL string  `json:"base_url,omitempty"`
	Models  []Model `json:"models"`
}

// Model is one model a provider offers.
type Model struct {
	ID                  string `json:"id"`
	ContextWindowTokens int64  `json:"context_window_tokens,omitempty"`
}

// Provider is one provider of the catalogue as GET /v1/models shows it.
type Provider struct {
	ID          string   `json:"id"`
	Dialect     string   `json:"dialect"`
	MediaInputs []string `json:"media_inputs"`
	Models      []Model  `json:"models"`
}

// ModelList is the answer of GET /v1/models.
type ModelList struct {
	SnapshotDigest string     `json:"snapshot_digest"`
	Providers      []Provider `json:"providers"`
}

// Catalog is the merged catalogue. It is immutable.
type Catalog struct {
	list ModelList
	byID map[string]Provider
}

//go:embed snapshot.json
var snapshot []byte

// mediaInputs is what each dialect's client can carry by URL.
var mediaInputs = map[string][]string{
	DialectOpenAIResponses: {"image", "file"},
	DialectAnthropic:       {"image", "file"},
	DialectOpenAIChat:      {"image"},
	DialectScripted:        {},
}

// New merges extra over the embedded snapshot; extra's providers supersede
// the snapshot's of the same name.
func New(extra *File) (*Catalog, error) {
	var base File
	if err := json.Unmarshal(snapshot, &base); err != nil {
		return nil, fmt.Errorf("catalog: embedded snapshot: %w", err)
	}
	merged := map[string]FileProvider{}
	for _, p := range base.Providers {
		merged[p.Name] = p
	}
	if extra != nil {
		for _, p := range extra.Providers {
			merged[p.Name] = p
		}
	}
	c := &Catalog{byID: map[string]Provider{}}
	for _, p := range merged {
		models := slices.Clone(p.Models)
		if models == nil {
			models = []Model{}
		}
		slices.SortFunc(models, func(a, b Model) int { return strings.Compare(a.ID, b.ID) })
		pr := Provider{ID: p.Name, Dialect: p.Dialect, MediaInputs: slices.Clone(mediaInputs[p.Dialect]), Models: models}
		c.list.Providers = append(c.list.Providers, pr)
		c.byID[p.Name] = pr
	}
	slices.SortFunc(c.list.Providers, func(a, b Provider) int { return strings.Compare(a.ID, b.ID) })
	canon, err := json.Marshal(c.list.Providers)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	sum := sha256.Sum256(canon)
	c.list.SnapshotDigest = "sha256:" + hex.EncodeToString(sum[:])
	return c, nil
}

// List answers the whole catalogue.
func (c *Catalog) List() ModelList {
	return c.list
}

// Provider answers the catalogue entry of id.
func (c *Catalog) Provider(id string) (Provider, bool) {
	p, ok := c.byID[id]
	return p, ok
}

// ReadFile reads and checks the providers file at path. What is not a
// regular file (a named pipe, which would hold the server's start until
// something wrote to it, a directory, a device) or holds more than
// MaxFileBytes is refused as invalid, naming path; no more than
// MaxFileBytes+1 bytes are ever read.
func ReadFile(path string) (*File, error) {
	f, _, err := fsutil.OpenRegular(path)
	if errors.Is(err, fsutil.ErrNotRegular) {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	defer f.Close()
	b, err := fsutil.ReadBounded(f, path, MaxFileBytes)
	if errors.Is(err, fsutil.ErrTooLarge) {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: %s: %w", path, err)
	}
	file, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return file, nil
}

// Decode parses and checks a providers file.
func Decode(b []byte) (*File, error) {
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrInvalid, MaxFileBytes)
	}
	if err := checkText(b); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	// The decoder keeps the last of two members of one name, and takes a
	// member for a field whose name differs only in case: a field given
	// twice would lose the other without a word.
	if at, key, dup, misnamed := envapi.StrictMembers(b, &File{}); dup || misnamed {
		where := ""
		if at != "" {
			where = " in " + at
		}
		if dup {
			return nil, fmt.Errorf("%w: %q is given twice%s", ErrInvalid, key, where)
		}
		return nil, fmt.Errorf("%w: unknown member %q%s (names are lower case)", ErrInvalid, key, where)
	}
	if at, key, found := unknownMember(b, reflect.TypeFor[File]()); found {
		if at == "" {
			return nil, fmt.Errorf("%w: unknown member %q", ErrInvalid, key)
		}
		return nil, fmt.Errorf("%w: unknown member %q in %s", ErrInvalid, key, at)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, typeError(b, te))
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	// Decoder.More answers false before a stray closing brace or bracket;
	// only the end of the input may follow the value.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: data after the object", ErrInvalid)
	}
	if f.Providers == nil {
		return nil, fmt.Errorf("%w: no providers array", ErrInvalid)
	}
	seen := map[string]bool{}
	for i, p := range f.Providers {
		if err := p.check(); err != nil {
			return nil, fmt.Errorf("%w: providers[%d]: %w", ErrInvalid, i, err)
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("%w: provider %q listed twice", ErrInvalid, p.Name)
		}
		seen[p.Name] = true
	}
	return &f, nil
}

func (p FileProvider) check() error {
	if !namePattern.MatchString(p.Name) {
		return fmt.Errorf("name %q does not match %s", p.Name, namePattern)
	}
	if p.Name == "scripted" {
		return errors.New(`name "scripted" is the offline model's`)
	}
	switch p.Dialect {
	case DialectOpenAIResponses, DialectOpenAIChat, DialectAnthropic:
	default:
		return fmt.Errorf("dialect %q: want %s, %s or %s", p.Dialect, DialectOpenAIResponses, DialectOpenAIChat, DialectAnthropic)
	}
	u, err := url.Parse(p.BaseURL)
	if err != nil || !netutil.BaseURLText(p.BaseURL) || (u.Scheme != "http" && u.Scheme != "https") || !netutil.HostName(u.Hostname()) || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		// The value is not quoted: what makes it wrong may be a
		// credential written into it.
		return fmt.Errorf("base_url of %q: want an http or https URL naming a host, without credentials, query, fragment, white space or invisible format characters", p.Name)
	}
	if !netutil.DialablePort(u.Port()) {
		return fmt.Errorf("base_url of %q: want a port from 1 to 65535, or none", p.Name)
	}
	if len(p.Models) > MaxModels {
		return fmt.Errorf("%d models, at most %d", len(p.Models), MaxModels)
	}
	ids := map[string]bool{}
	for _, m := range p.Models {
		if m.ID == "" || len(m.ID) > 256 || strings.ContainsFunc(m.ID, hiddenRune) {
			return fmt.Errorf("model id %+q: want 1..256 bytes without white space, control or format characters", m.ID)
		}
		if ids[m.ID] {
			return fmt.Errorf("model %q listed twice", m.ID)
		}
		ids[m.ID] = true
		if m.ContextWindowTokens < 0 {
			return fmt.Errorf("model %q: negative context_window_tokens", m.ID)
		}
	}
	return nil
}

// hiddenRune reports whether r may not appear in a model id: white space
// and control characters, and format characters (zero-width ones, byte
// order marks, bidirectional overrides and isolates), which show nothing
// or reorder what follows: an id holding one reads in GET /v1/models as
// another id, or with its characters in another order.
func hiddenRune(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}
