package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/internal/fsutil"
	"github.com/brain-in-go/brain/providers/workspace"
)

// checkInert refuses the settings that would have no effect beside the
// others: an operator who wrote one expected it to do something.
func (f *serveFlags) checkInert() error {
	var errs []error
	if f.noWorkspace && f.workspaceRoot != "" {
		errs = append(errs, errors.New("--workspace-root (BRAIN_WORKSPACE_ROOT) has no effect with --no-workspace (BRAIN_NO_WORKSPACE): the built-in workspace environment does not run"))
	}
	if f.envAPIKey != "" && f.envBaseURL == "" {
		// Beside the built-in workspace the default route is the
		// workspace, with a key of its own; without it there is no
		// default route. Either way the key would go nowhere.
		errs = append(errs, errors.New("--environment-api-key (BRAIN_ENVIRONMENT_API_KEY) is the credential of the default route, which --environment-base-url (BRAIN_ENVIRONMENT_BASE_URL) names, and that is not set"))
	}
	if f.given["lease-secs"] && f.databaseURL == "" {
		// Without a database the node owns every session for good:
		// there is no lease to last.
		errs = append(errs, errors.New("--lease-secs (BRAIN_LEASE_SECS) is the lease of a cluster node on its sessions, and --database-url (BRAIN_DATABASE_URL) is not set"))
	}
	if f.given["telemetry-max-file-bytes"] && f.telemetryFile == "" {
		errs = append(errs, errors.New("--telemetry-max-file-bytes (BRAIN_TELEMETRY_MAX_FILE_BYTES) bounds the telemetry file, and --telemetry-file (BRAIN_TELEMETRY_FILE) is not set"))
	}
	return errors.Join(errs...)
}

// checkWorkspaceBound refuses an environment answer bound too small for
// the built-in workspace environment, which cuts its answers to fit
// Brain's bound: below workspace.MinAnswerBytes not even its failure
// output_limit fits, so every operation of a session would fail.
func (f *serveFlags) checkWorkspaceBound() error {
	if f.noWorkspace || f.maxEnvResponseBytes >= workspace.MinAnswerBytes {
		return nil
	}
	return fmt.Errorf("--max-environment-response-bytes %d (BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES): the built-in workspace environment needs at least %d, the least that holds one of its answers; give at least %d, or --no-workspace (BRAIN_NO_WORKSPACE=1) to run without it",
		f.maxEnvResponseBytes, workspace.MinAnswerBytes, workspace.MinAnswerBytes)
}

// maxRoutesFileBytes bounds the routes file read here; brain.New refuses
// a longer one.
const maxRoutesFileBytes = 1 << 20

// checkRoutesFile refuses a routes file with a credential no
// Authorization header can carry (see headerCredential), and one that
// routes "workspace" beside the built-in workspace environment, whose
// route would silently win over it. A file that cannot be read or decoded
// is left to brain.New, which says what is wrong with it.
func (f *serveFlags) checkRoutesFile() error {
	if f.envRoutesFile == "" {
		return nil
	}
	// Only a regular file is read here: a named pipe would hold the start
	// until something wrote to it. brain.New then says what is wrong.
	data, err := fsutil.ReadRegular(f.envRoutesFile, maxRoutesFileBytes)
	if err != nil {
		return nil
	}
	var routes map[string]json.RawMessage
	if json.Unmarshal(data, &routes) != nil {
		return nil
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(routes)) {
		var route struct {
			APIKey string `json:"api_key"`
		}
		if json.Unmarshal(routes[name], &route) == nil && !headerCredential(route.APIKey) {
			errs = append(errs, fmt.Errorf("--environment-routes-file %s (BRAIN_ENVIRONMENT_ROUTES_FILE): the api_key of route %q %s", f.envRoutesFile, name, credentialProblem))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if _, ok := routes[workspaceRoute]; ok && !f.noWorkspace {
		return fmt.Errorf("--environment-routes-file %s (BRAIN_ENVIRONMENT_ROUTES_FILE) routes %q, the route of the built-in workspace environment: pass --no-workspace (BRAIN_NO_WORKSPACE=1) to route it to another provider", f.envRoutesFile, workspaceRoute)
	}
	return nil
}

// credentialProblem says why headerCredential refuses a credential,
// without quoting it.
const credentialProblem = "has white space at an end or a control character (a line end read with it?): no Authorization header can carry it"

// headerCredential reports whether an environment credential can be sent
// as "Authorization: Bearer <credential>": a control character makes
// every request fail before it is sent, and white space at an end is not
// part of the header's value, so the provider would refuse every request.
// Each session creation that reaches the route would fail.
func headerCredential(key string) bool {
	return key == strings.TrimSpace(key) && !strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// checkEnvironmentKey refuses a default route's credential no
// Authorization header can carry.
func (f *serveFlags) checkEnvironmentKey() error {
	if headerCredential(f.envAPIKey) {
		return nil
	}
	return errors.New("--environment-api-key (BRAIN_ENVIRONMENT_API_KEY) " + credentialProblem)
}

// configField matches a Config field named with its variable in a
// problem's text, such as "Storage.DatabaseURL (BRAIN_DATABASE_URL)".
var configField = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*(?:\.[A-Z][A-Za-z0-9]*)* \(([A-Z][A-Z0-9_]*)\)`)

// settingsError says which settings a *brain.ConfigError refuses, naming
// each by its flag and variable, and reports whether err is one.
func (f *serveFlags) settingsError(err error) (string, bool) {
	var ce *brain.ConfigError
	if !errors.As(err, &ce) {
		return "", false
	}
	parts := make([]string, len(ce.Problems))
	for i, p := range ce.Problems {
		// A problem naming another setting names it as a Config field
		// and its variable: the operator wrote its flag or variable.
		p.Problem = configField.ReplaceAllStringFunc(p.Problem, func(m string) string {
			env := configField.FindStringSubmatch(m)[1]
			if name, ok := f.flagOf[env]; ok {
				return fmt.Sprintf("--%s (%s)", name, env)
			}
			return m
		})
		switch name, ok := f.flagOf[p.Env]; {
		case ok:
			parts[i] = fmt.Sprintf("--%s (%s) %s", name, p.Env, p.Problem)
		case p.Env != "":
			parts[i] = p.Env + " " + p.Problem
		default:
			parts[i] = p.String()
		}
	}
	return strings.Join(parts, "; "), true
}
