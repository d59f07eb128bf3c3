package httpapi

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/brain-in-go/brain/brain/api"
)

var identifierRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

const maxSecretBytes = 16384

// validateCreate checks the fields of a create request beyond its JSON
// shape; the engine checks the cross references.
// presentCredentials checks what the decoded request cannot show: a
// credential given as "" (the field is omitempty, so "" reads as absent),
// which the reference refuses (1..16384 bytes).
func presentCredentials(body []byte) error {
	var shadow struct {
		Environments []struct {
			Credential *string `json:"credential"`
		} `json:"environments"`
	}
	if err := json.Unmarshal(body, &shadow); err != nil {
		return nil // the strict decoder has already judged the body
	}
	for i, env := range shadow.Environments {
		if env.Credential != nil && *env.Credential == "" {
			return invalidField(fmt.Sprintf("environments[%d].credential must be 1 to 16384 bytes; omit it for none", i))
		}
	}
	return nil
}

func validateCreate(req *api.CreateSessionRequest) error {
	m := req.Model
	if m.Provider == "" || m.Name == "" || strings.ContainsAny(m.Name, " \t\r\n") {
		return invalidField("model needs a provider and a name without whitespace")
	}
	if len(m.APIKey) > maxSecretBytes {
		return invalidField("model.api_key must be at most 16384 bytes")
	}
	if a := req.Agentloop; a != nil {
		if len(a.Implementation) > 0 && !isObject(a.Implementation) {
			return invalidField("agentloop.implementation must be an object")
		}
		if a.Environment != "" && !identifierRE.MatchString(a.Environment) {
			return invalidField("agentloop.environment must be an identifier")
		}
		if err := validateGrants("agentloop.environments", a.Environments); err != nil {
			return err
		}
	}
	for i, env := range req.Environments {
		where := fmt.Sprintf("environments[%d]", i)
		if !identifierRE.MatchString(env.Name) {
			return invalidField(where + ".name must be an identifier")
		}
		switch env.Driver {
		case api.DriverBrain:
		case api.DriverHost:
			if env.HostID == "" {
				return invalidField(where + ".host_id is required for driver host")
			}
		case api.DriverHTTP:
			u, err := url.Parse(env.URL)
			if err != nil || len(env.URL) > 2048 || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
				return invalidField(where + ".url must be an http(s) URL of at most 2048 bytes")
			}
		default:
			// Any other driver names a route of the operator's
			// (BRAIN_ENVIRONMENT_ROUTES_FILE), checked when the session is
			// created.
			if !identifierRE.MatchString(env.Driver) {
				return invalidField(where + ".driver must be brain, host, http or a route name")
			}
		}
		if len(env.Credential) > maxSecretBytes {
			return invalidField(where + ".credential must be at most 16384 bytes")
		}
		if env.Lifecycle != "" && env.Lifecycle != api.LifecycleAutomatic && env.Lifecycle != api.LifecycleManual {
			return invalidField(where + ".lifecycle must be automatic or manual")
		}
		if err := validateGrants(where+".environments", env.Environments); err != nil {
			return err
		}
	}
	for i, t := range req.Tools {
		where := fmt.Sprintf("tools[%d]", i)
		if !identifierRE.MatchString(t.Name) {
			return invalidField(where + ".name must be an identifier")
		}
		if !isObject(t.InputSchema) {
			return invalidField(where + ".input_schema must be an object")
		}
		if err := validateGrants(where+".environments", t.Environments); err != nil {
			return err
		}
	}
	for i, msg := range req.Transcript {
		if err := validateMessage(fmt.Sprintf("transcript[%d]", i), msg); err != nil {
			return err
		}
	}
	if req.IdleTTLMs != nil && *req.IdleTTLMs < 0 {
		return invalidField("idle_ttl_ms must not be negative")
	}
	return nil
}

var permissions = map[string]bool{"read": true, "create": true, "setup": true, "update": true, "delete": true, "call": true}

func validateGrants(where string, grants []api.EnvironmentGrant) error {
	for i, g := range grants {
		if !identifierRE.MatchString(g.Environment) {
			return invalidField(fmt.Sprintf("%s[%d].environment must be an identifier", where, i))
		}
		for _, p := range g.Permissions {
			if !permissions[p] {
				return invalidField(fmt.Sprintf("%s[%d].permissions holds unknown %q", where, i, p))
			}
		}
	}
	return nil
}

var roles = map[string]bool{api.RoleUser: true, api.RoleAssistant: true, api.RoleDeveloper: true}

func validateMessage(where string, m api.Message) error {
	if !roles[m.Role] {
		return invalidField(where + ".role must be user, assistant or developer")
	}
	for i, b := range m.Content {
		w := fmt.Sprintf("%s.content[%d]", where, i)
		switch b.Type {
		case api.BlockText, api.BlockNative:
		case api.BlockImage, api.BlockFile:
			if b.URL == "" {
				return invalidField(w + ".url is required")
			}
		case api.BlockToolUse:
			if b.ID == "" || b.Name == "" {
				return invalidField(w + " needs id and name")
			}
		case api.BlockToolResult:
			if b.ToolUseID == "" || b.IsError == nil {
				return invalidField(w + " needs tool_use_id and is_error")
			}
		default:
			return invalidField(w + ".type is not a content block type")
		}
	}
	return nil
}

// validateInput checks a user input: a non-empty message and media by
// HTTPS URL without user info.
func validateInput(in api.UserInput) error {
	if in.Message == "" {
		return invalidField("input.message must not be empty")
	}
	for i, m := range in.Media {
		where := fmt.Sprintf("input.media[%d]", i)
		u, err := url.Parse(m.URL)
		if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.User != nil {
			return invalidField(where + ".url must be an https URL without user info")
		}
		switch {
		case m.Type == "image" && m.MediaType == "":
		case m.Type == "file" && m.MediaType == "application/pdf":
		default:
			return invalidField(where + " must be {type:image, url} or {type:file, media_type:application/pdf, url}")
		}
	}
	return nil
}

func isObject(b json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil
}
