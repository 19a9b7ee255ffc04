package keystore

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-gw/sluice/internal/config"
)

// MaxBody bounds an admin API request's body.
const MaxBody = 64 << 10

// MaxGrace bounds a rotation's grace.
const MaxGrace = 30 * 24 * time.Hour

// nameRE is what a key's (and a team's) name may be.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Env is what the API needs of the configuration serving now.
type Env struct {
	// ConfigKeys are the config file's keys:, which the API shows and
	// never changes.
	ConfigKeys []config.Key
	// Models are the client-facing models a key may name.
	Models []string
	// Open: the gateway does not require a key (auth.required is off),
	// so a key made now does not keep out requests without one.
	Open bool
}

// API serves the key admin API under /admin/keys (docs/KEYS.md).
type API struct {
	// Store keeps the keys; nil when the config names neither store:
	// nor state.dir, and then every change is refused saying so.
	Store Store
	// Guarded: admin.token_env is set, so the admin listener checks a
	// token before the API sees a request. Unguarded, the API refuses
	// everything (403): a key admin API without a token would hand keys
	// to whoever reaches the port.
	Guarded bool
	// Env reads the configuration serving now.
	Env func() Env
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Log hears what a failing store said, which answers leave out
	// (storeErr); nil: slog.Default.
	Log *slog.Logger
}

func (a *API) log() *slog.Logger {
	if a.Log != nil {
		return a.Log
	}
	return slog.Default()
}

// Handler routes the API's requests.
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /admin/keys", a.create)
	mux.HandleFunc("GET /admin/keys", a.list)
	mux.HandleFunc("GET /admin/keys/{name}", a.show)
	mux.HandleFunc("POST /admin/keys/{name}/{action}", a.act)
	mux.HandleFunc("/admin/keys/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, "not_found", "no route for "+r.Method+" "+quote(r.URL.Path)+
			"; the key API serves GET and POST /admin/keys, GET /admin/keys/{name}, POST /admin/keys/{name}/rotate|revoke|disable|enable")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.Guarded {
			fail(w, http.StatusForbidden, "no_admin_token",
				"the key API is off because the admin API has no token: set admin.token_env in the config to the name of a variable holding a long random token (e.g. openssl rand -hex 32), export it, and restart")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
		mux.ServeHTTP(w, r)
	})
}

func (a *API) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// apiError is an answer's error body.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func fail(w http.ResponseWriter, status int, code, msg string) {
	var e apiError
	e.Error.Code, e.Error.Message = code, msg
	reply(w, status, e)
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// quote is s quoted for a message: printable ASCII only, at most 80
// bytes of it, so an odd name cannot break a terminal or a log line.
func quote(s string) string {
	const most = 80
	if len(s) > most {
		return strconv.QuoteToASCII(s[:most]) + "…"
	}
	return strconv.QuoteToASCII(s)
}

func badName(what, name string) string {
	if name == "" {
		return what + " is missing; write e.g. team-search"
	}
	return fmt.Sprintf("%s %s is not allowed: a name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", what, quote(name))
}

// storeless answers a change without a store.
func storeless(w http.ResponseWriter) {
	fail(w, http.StatusConflict, "no_key_store",
		"keys made at run time need somewhere durable to live: set store: (a Redis URL, shared by the fleet) or state.dir: (a directory for this gateway) in the config and restart; keys in the config file's keys: work without either")
}

// configKey returns the config key of that name.
func (e Env) configKey(name string) (config.Key, bool) {
	for _, k := range e.ConfigKeys {
		if k.Name == name {
			return k, true
		}
	}
	return config.Key{}, false
}

func fromConfig(w http.ResponseWriter, name string) {
	fail(w, http.StatusConflict, "config_key",
		fmt.Sprintf("key %s is defined in the config file's keys:, which the API cannot change, rotate or revoke; edit it there and reload (SIGHUP)", quote(name)))
}

// storeErr answers a change the store refused. A store that failed
// (Redis unreachable, a file that cannot be written) is a 503 that says
// so in general terms: its error names socket addresses and paths
// (dial tcp 127.0.0.1:6379: connect: connection refused), which go to
// the log only.
func (a *API) storeErr(w http.ResponseWriter, name string, err error) {
	var bad badRequest
	switch {
	case errors.As(err, &bad):
		fail(w, http.StatusBadRequest, "invalid", bad.msg)
	case errors.Is(err, ErrExists):
		fail(w, http.StatusConflict, "exists", fmt.Sprintf("key %s exists; pick another name, or revoke it first", quote(name)))
	case errors.Is(err, errRevoked):
		fail(w, http.StatusNotFound, "revoked", fmt.Sprintf("key %s was revoked; it cannot come back: create a new key", quote(name)))
	case errors.Is(err, ErrNotFound):
		fail(w, http.StatusNotFound, "not_found", fmt.Sprintf("no key %s; GET /admin/keys lists them", quote(name)))
	default:
		where := "the key store"
		if a.Store != nil {
			where = "the key store (" + a.Store.Where() + ")"
			a.log().Warn("the key store did not take a change", "store", a.Store.Where(), "key", name, "cause", err.Error())
		}
		fail(w, http.StatusServiceUnavailable, "store_unavailable", where+" could not be reached or did not take the change, so nothing changed; try again when it is back (the gateway's log has the cause)")
	}
}

var errRevoked = errors.New("revoked")

type badRequest struct{ msg string }

func (b badRequest) Error() string { return b.msg }

// NewSecret makes a key's secret: 24 random bytes, in hex, after a
// prefix that says what it is (as sluice keys new makes them).
func NewSecret() (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "sk-sluice-" + hex.EncodeToString(b[:]), nil
}

// Created is the answer to a create or a rotate: the secret, shown this
// once, and the record.
type Created struct {
	Secret  string `json:"secret"`
	Key     View   `json:"key"`
	Warning string `json:"warning,omitempty"`
}

// List is the answer to GET /admin/keys.
type List struct {
	Keys []View `json:"keys"`
	// Store says where keys made at run time live ("" for nowhere).
	Store string `json:"store"`
}

// View is a key as the API shows it: the config's fields under their
// config names (tenant as team; zero values left out), then source
// ("config" or "api"), status (active, disabled, expired) and, for a key
// made at run time, its times, and its rotation while the old secret
// still works. Never the secret.
type View map[string]any

func (a *API) view(k config.Key, r *Record) View {
	v := fieldsOf(k)
	if t, ok := v["tenant"]; ok {
		delete(v, "tenant")
		v["team"] = t
	}
	v["name"] = k.Name
	v["source"] = "config"
	v["status"] = "active"
	if r == nil {
		return v
	}
	now := a.now()
	v["source"] = "api"
	v["created_at"] = r.CreatedAt.UTC().Format(time.RFC3339)
	v["updated_at"] = r.UpdatedAt.UTC().Format(time.RFC3339)
	if r.ExpiresAt != nil {
		v["expires_at"] = r.ExpiresAt.UTC().Format(time.RFC3339)
	}
	switch {
	case r.Disabled:
		v["status"] = "disabled"
	case r.ExpiresAt != nil && !now.Before(*r.ExpiresAt):
		v["status"] = "expired"
	}
	v["disabled"] = r.Disabled
	if r.OldSHA256 != "" && now.Before(r.OldUntil) {
		v["rotation"] = map[string]any{"old_sha256": r.OldSHA256, "old_works_until": r.OldUntil.UTC().Format(time.RFC3339)}
	}
	return v
}

// fieldsOf is k's fields under their config (yaml) names, zero values
// left out: every field config.Key has, without naming them here.
func fieldsOf(k config.Key) map[string]any {
	out := map[string]any{}
	data, err := yaml.Marshal(k)
	if err != nil {
		return out
	}
	if yaml.Unmarshal(data, &out) != nil {
		return map[string]any{}
	}
	prune(out)
	return out
}

// prune drops zero values: nil, "", 0, "0s", empty lists and maps.
func prune(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case string:
			if x == "" || x == "0s" {
				delete(m, k)
			}
		case int:
			if x == 0 {
				delete(m, k)
			}
		case float64:
			if x == 0 {
				delete(m, k)
			}
		case []any:
			if len(x) == 0 {
				delete(m, k)
			}
		case map[string]any:
			prune(x)
			if len(x) == 0 {
				delete(m, k)
			}
		}
	}
}

func (a *API) list(w http.ResponseWriter, r *http.Request) {
	env := a.Env()
	out := List{Keys: []View{}}
	for _, k := range env.ConfigKeys {
		out.Keys = append(out.Keys, a.view(k, nil))
	}
	if a.Store != nil {
		out.Store = a.Store.Where()
		snap := a.Store.Snapshot()
		names := make([]string, 0, len(snap.Records))
		for n, rec := range snap.Records {
			if !rec.Revoked {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			rec := snap.Records[n]
			if _, shadowed := env.configKey(n); shadowed {
				continue // made before the config named it: the config's wins
			}
			out.Keys = append(out.Keys, a.view(rec.Key, rec))
		}
	}
	reply(w, http.StatusOK, out)
}

func (a *API) show(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if !nameRE.MatchString(name) {
		fail(w, http.StatusBadRequest, "invalid", badName("key name", name))
		return
	}
	env := a.Env()
	if k, ok := env.configKey(name); ok {
		reply(w, http.StatusOK, a.view(k, nil))
		return
	}
	if a.Store != nil {
		if rec := a.Store.Snapshot().Records[name]; rec != nil {
			if rec.Revoked {
				a.storeErr(w, name, errRevoked)
				return
			}
			reply(w, http.StatusOK, a.view(rec.Key, rec))
			return
		}
	}
	a.storeErr(w, name, ErrNotFound)
}

// readJSON reads the body as one JSON object, numbers as json.Number.
// An empty body is an empty object.
func readJSON(w http.ResponseWriter, r *http.Request) (map[string]any, bool) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			fail(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("the body is over %d KiB; a key's definition is far smaller", MaxBody>>10))
			return nil, false
		}
		fail(w, http.StatusBadRequest, "invalid", "the body did not arrive whole: "+err.Error())
		return nil, false
	}
	out := map[string]any{}
	if len(bytes.TrimSpace(data)) == 0 {
		return out, true
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		fail(w, http.StatusBadRequest, "invalid", "the body must be one JSON object: "+err.Error())
		return nil, false
	}
	if dec.More() {
		fail(w, http.StatusBadRequest, "invalid", "the body must be one JSON object, with nothing after it")
		return nil, false
	}
	return out, true
}

// apiFields are the fields a create takes besides the config's.
var apiFields = []string{"team", "expires_at", "disabled"}

// spec reads a create's body into a record (without its secret).
func (a *API) spec(body map[string]any, env Env, now time.Time) (*Record, error) {
	bad := func(format string, args ...any) error { return badRequest{fmt.Sprintf(format, args...)} }
	if err := positive("", body); err != nil {
		return nil, err
	}
	for _, f := range []string{"sha256", "source", "status", "created_at", "updated_at", "rotation", "secret"} {
		if _, ok := body[f]; ok {
			return nil, bad("field %q is not yours to set: the gateway makes the secret and keeps the record's times; leave it out", f)
		}
	}
	if _, ok := body["tenant"]; ok {
		return nil, bad(`field "tenant" is called "team" here; write "team"`)
	}
	rec := &Record{}
	if t, ok := body["team"]; ok {
		s, _ := t.(string)
		if !nameRE.MatchString(s) {
			return nil, bad("%s", badName("team", fmt.Sprint(t)))
		}
		body["tenant"] = s
		delete(body, "team")
	}
	if e, ok := body["expires_at"]; ok {
		s, _ := e.(string)
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return nil, bad("expires_at %s is not a time: write it as RFC 3339, e.g. %s", quote(fmt.Sprint(e)), now.Add(30*24*time.Hour).UTC().Format(time.RFC3339))
		}
		if !t.After(now) {
			return nil, bad("expires_at %s is not in the future (it is %s now); write a later time, or leave it out for a key that does not expire", s, now.UTC().Format(time.RFC3339))
		}
		rec.ExpiresAt = &t
		delete(body, "expires_at")
	}
	if d, ok := body["disabled"]; ok {
		b, isBool := d.(bool)
		if !isBool {
			return nil, bad("disabled must be true or false")
		}
		rec.Disabled = b
		delete(body, "disabled")
	}
	k, err := decodeKey(body)
	if err != nil {
		return nil, err
	}
	if !nameRE.MatchString(k.Name) {
		return nil, bad("%s", badName("name", k.Name))
	}
	if k.Priority != "" && !slices.Contains([]string{config.PriorityCritical, config.PriorityInteractive, config.PriorityBackground}, k.Priority) {
		return nil, bad("priority %s is not a class; write critical, interactive or background", quote(k.Priority))
	}
	for _, m := range k.Models {
		if !slices.Contains(env.Models, m) {
			return nil, bad("model %s is not one this gateway serves; known models: %s", quote(m), strings.Join(env.Models, ", "))
		}
	}
	if b := k.Limits.Burst.D(); b < 0 || b > time.Hour {
		return nil, bad("limits.burst must be above 0 and at most 1h; write e.g. 10s, or leave it out for the default (%s)", config.DefaultBurst)
	}
	if lm, ok := body["limits"].(map[string]any); ok {
		if _, ok := lm["burst"]; ok && k.Limits.Burst <= 0 {
			return nil, bad("limits.burst must be above 0; write e.g. 10s, or leave it out for the default (%s)", config.DefaultBurst)
		}
	}
	rec.Key = k
	return rec, nil
}

// positive refuses a number at or below zero anywhere in v: every number
// in a key's definition is a limit, and a limit of 0 reads as "none
// allowed" to some and "no limit" to others.
func positive(at string, v any) error {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := k
			if at != "" {
				p = at + "." + k
			}
			if err := positive(p, e); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := positive(fmt.Sprintf("%s[%d]", at, i), e); err != nil {
				return err
			}
		}
	case json.Number:
		f, err := x.Float64()
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return badRequest{fmt.Sprintf("%s is %s, not a number this gateway can hold", at, quote(x.String()))}
		}
		if f <= 0 {
			return badRequest{fmt.Sprintf("%s is %s: a limit must be above 0; leave it out for no limit", at, x.String())}
		}
	}
	return nil
}

// unknownField reads yaml's "field x not found in type config.T".
var unknownField = regexp.MustCompile(`field (\S+) not found in type \S+`)

// decodeKey reads the config's fields from body as the config file would
// (strictly: an unknown field is refused), by way of YAML, so that every
// field config.Key has, or gains, is read under its config name.
func decodeKey(body map[string]any) (config.Key, error) {
	var k config.Key
	data, err := yaml.Marshal(numbers(body))
	if err != nil {
		return k, badRequest{"the body could not be read: " + err.Error()}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&k); err != nil {
		if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
			known := append(append([]string{}, apiFields...), keyFieldNames()...)
			sort.Strings(known)
			return k, badRequest{fmt.Sprintf("unknown field %s; a key has %s", quote(m[1]), strings.Join(known, ", "))}
		}
		msg := err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		return k, badRequest{"a field has the wrong type: " + strings.TrimSpace(msg)}
	}
	// The config's own decoder, which the YAML package is not: a count
	// must be a whole number (rpm: 0.9 is refused, not read as 0, which
	// would be no limit at all).
	if _, err := config.DecodeKey(data); err != nil {
		return k, badRequest{err.Error()}
	}
	return k, nil
}

// keyFieldNames are config.Key's fields a create may set.
func keyFieldNames() []string {
	var out []string
	for n := range fieldsOf(config.Key{Name: "x", Tenant: "x", Priority: "x", Models: []string{"x"}, Limits: config.Limits{RPM: 1}, Degrade: new(bool),
		Cache: &config.KeyCache{Enabled: new(bool)}}) {
		if n != "sha256" && n != "tenant" {
			out = append(out, n)
		}
	}
	return out
}

// numbers turns json.Numbers into int64s (or float64s), which YAML
// writes as numbers.
func numbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

func (a *API) create(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSON(w, r)
	if !ok {
		return
	}
	env := a.Env()
	now := a.now()
	rec, err := a.spec(body, env, now)
	if err != nil {
		a.storeErr(w, "", err)
		return
	}
	name := rec.Key.Name
	if _, ok := env.configKey(name); ok {
		fail(w, http.StatusConflict, "config_key",
			fmt.Sprintf("key %s is defined in the config file's keys:; a key made at run time cannot shadow it: pick another name", quote(name)))
		return
	}
	if a.Store == nil {
		storeless(w)
		return
	}
	secret, err := NewSecret()
	if err != nil {
		fail(w, http.StatusInternalServerError, "internal", "no random secret: "+err.Error())
		return
	}
	rec.Key.SHA256 = config.KeyHash(secret)
	rec.CreatedAt, rec.UpdatedAt = now, now
	out, err := a.Store.Apply(r.Context(), name, func(cur *Record) (*Record, error) {
		if cur != nil && !cur.Revoked {
			return nil, ErrExists
		}
		return rec, nil
	})
	if err != nil {
		a.storeErr(w, name, err)
		return
	}
	c := Created{Secret: secret, Key: a.view(out.Key, out)}
	if env.Open {
		c.Warning = "this gateway does not require a key (auth.required is off, as it was at start): requests without one still pass. It will require keys from its next restart or reload; set auth.required: true to say so now"
	}
	reply(w, http.StatusCreated, c)
}

func (a *API) act(w http.ResponseWriter, r *http.Request) {
	name, action := r.PathValue("name"), r.PathValue("action")
	if !slices.Contains([]string{"rotate", "revoke", "disable", "enable"}, action) {
		fail(w, http.StatusNotFound, "not_found", fmt.Sprintf("no action %s; POST /admin/keys/{name}/rotate, /revoke, /disable or /enable", quote(action)))
		return
	}
	if !nameRE.MatchString(name) {
		fail(w, http.StatusBadRequest, "invalid", badName("key name", name))
		return
	}
	body, ok := readJSON(w, r)
	if !ok {
		return
	}
	var grace time.Duration
	for f, v := range body {
		if action != "rotate" || f != "grace" {
			fail(w, http.StatusBadRequest, "invalid", fmt.Sprintf("unknown field %s; %s takes %s", quote(f), action, map[bool]string{true: `{"grace":"10m"}`, false: "no body"}[action == "rotate"]))
			return
		}
		s, _ := v.(string)
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 || d > MaxGrace {
			fail(w, http.StatusBadRequest, "invalid", fmt.Sprintf("grace %s must be a duration from 0s to %s, e.g. \"10m\": how long the old secret keeps working", quote(fmt.Sprint(v)), "720h"))
			return
		}
		grace = d
	}
	if _, ok := a.Env().configKey(name); ok {
		fromConfig(w, name)
		return
	}
	if a.Store == nil {
		storeless(w)
		return
	}
	now := a.now()
	var secret string
	if action == "rotate" {
		var err error
		if secret, err = NewSecret(); err != nil {
			fail(w, http.StatusInternalServerError, "internal", "no random secret: "+err.Error())
			return
		}
	}
	out, err := a.Store.Apply(r.Context(), name, func(cur *Record) (*Record, error) {
		switch {
		case cur == nil:
			return nil, ErrNotFound
		case cur.Revoked:
			return nil, errRevoked
		}
		cur.UpdatedAt = now
		switch action {
		case "rotate":
			cur.OldSHA256, cur.OldUntil = "", time.Time{}
			if grace > 0 {
				cur.OldSHA256, cur.OldUntil = cur.Key.SHA256, now.Add(grace)
			}
			cur.Key.SHA256 = config.KeyHash(secret)
		case "revoke":
			cur.Revoked, cur.RevokedAt = true, &now
			cur.OldSHA256, cur.OldUntil = "", time.Time{}
		case "disable":
			cur.Disabled = true
		case "enable":
			cur.Disabled = false
		}
		return cur, nil
	})
	if err != nil {
		a.storeErr(w, name, err)
		return
	}
	switch action {
	case "rotate":
		reply(w, http.StatusOK, Created{Secret: secret, Key: a.view(out.Key, out)})
	case "revoke":
		reply(w, http.StatusOK, map[string]any{"name": name, "revoked": true, "revoked_at": now.UTC().Format(time.RFC3339)})
	default:
		reply(w, http.StatusOK, a.view(out.Key, out))
	}
}
