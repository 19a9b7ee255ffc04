package cli

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
)

const keysUsage = `usage: sluice keys COMMAND [flags]

Keys made at run time, through a running gateway's admin key API
(docs/KEYS.md; the gateway keeps them in store: or state.dir:):
  sluice keys create NAME [--team T] [--priority P] [--models a,b] [--rpm N] [--itpm N] [--otpm N] [--expires 720h]
                                  make a key; print its secret, once
  sluice keys list                list every key, the config's too (never a secret)
  sluice keys show NAME           show one key
  sluice keys rotate NAME [--grace 10m]
                                  give the key a new secret; the old one works until the grace ends
  sluice keys revoke NAME         end the key for good: both secrets stop
  sluice keys disable NAME        refuse the key until enabled
  sluice keys enable NAME         let a disabled key in again
Each takes --admin URL (default $SLUICE_ADMIN_URL, else the admin_listen of
--config FILE, else http://` + config.DefaultAdminListen + `), --token-env NAME (the
variable holding the admin token; default SLUICE_ADMIN_TOKEN, else --config's
admin.token_env) and --json (print the API's JSON answer).

Keys declared in the config file (keys:; no gateway needed):
  sluice keys new [--name NAME]   make a key; print it and the keys: entry for the config
  sluice keys hash < KEYFILE      print the SHA-256 of a key read from standard input

Run "sluice keys COMMAND --help" for a command's flags.
`

// Keys runs "sluice keys": new and hash make and hash keys for the
// config file; create, list, show, rotate, revoke, disable and enable
// are a client of a running gateway's admin key API.
func Keys(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, keysUsage)
		return 2
	}
	switch args[0] {
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, keysUsage)
		return 0
	case "new":
		return keysNew(args[1:], stdout, stderr)
	case "hash":
		return keysHash(args[1:], stdin, stdout, stderr)
	case "create", "list", "show", "rotate", "revoke", "disable", "enable":
		return keysAPI(args[0], args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "sluice keys: unknown command %q\n%s", args[0], keysUsage)
	return 2
}

func keysNew(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice keys new", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sluice keys new [--name NAME]\n\nMake a key for the config file's keys: (declarative; no gateway is asked). Prints the key, once, and its entry.")
		fs.PrintDefaults()
	}
	name := fs.String("name", "my-team", "the key's name in the config")
	if err := fs.Parse(args); err != nil {
		return helpOr2(err)
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		fmt.Fprintf(stderr, "sluice keys new: %v\n", err)
		return 1
	}
	key := fmt.Sprintf("sk-sluice-%x", b)
	fmt.Fprintf(stdout, "key (give it to the client; it is not stored anywhere):\n  %s\n\nconfig:\nkeys:\n  - name: %s\n    sha256: %s\n", key, *name, config.KeyHash(key))
	return 0
}

func keysHash(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice keys hash", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sluice keys hash < KEYFILE\n\nPrint the SHA-256 of a key read from standard input, for the config file's keys[].sha256.")
	}
	if err := fs.Parse(args); err != nil {
		return helpOr2(err)
	}
	data, err := io.ReadAll(io.LimitReader(stdin, 4096))
	if err != nil {
		fmt.Fprintf(stderr, "sluice keys hash: %v\n", err)
		return 1
	}
	key := string(trimSpace(data))
	if key == "" {
		fmt.Fprintln(stderr, "sluice keys hash: no key on standard input")
		return 2
	}
	fmt.Fprintln(stdout, config.KeyHash(key))
	return 0
}

// helpOr2 is the exit code of a flag parse that failed: 0 for --help.
func helpOr2(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

// keysCmd is what each API command says of itself.
var keysCmd = map[string]struct{ args, about string }{
	"create":  {"NAME [flags]", "Make a key at run time. Its secret is printed once; the gateway keeps only its SHA-256."},
	"list":    {"", "List every key: the config file's (source config) and those made at run time (source api). Never a secret."},
	"show":    {"NAME", "Show one key."},
	"rotate":  {"NAME [--grace 10m]", "Give the key a new secret, printed once. The old secret works until the grace ends (default 0s: it stops at once)."},
	"revoke":  {"NAME", "End the key for good: its secrets stop working, and it cannot be enabled again."},
	"disable": {"NAME", "Refuse the key's requests (401) until it is enabled."},
	"enable":  {"NAME", "Let a disabled key in again."},
}

// keysAPI runs one of the API commands.
func keysAPI(cmd string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice keys "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	info := keysCmd[cmd]
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: sluice keys %s %s\n\n%s\n\nflags:\n", cmd, info.args, info.about)
		fs.PrintDefaults()
	}
	admin := fs.String("admin", "", "the gateway's admin `URL` (default: $SLUICE_ADMIN_URL, else --config's admin_listen, else http://"+config.DefaultAdminListen+")")
	tokenEnv := fs.String("token-env", "", "the environment `variable` holding the admin token (default: SLUICE_ADMIN_TOKEN, else --config's admin.token_env)")
	cfgPath := fs.String("config", "", "the gateway's config `file`, to find its admin_listen and admin.token_env")
	asJSON := fs.Bool("json", false, "print the API's JSON answer")
	var (
		team, priority, models, expires, spec *string
		rpm, itpm, otpm                       *int64
		disabled                              *bool
		grace                                 *time.Duration
	)
	switch cmd {
	case "create":
		team = fs.String("team", "", "the key's team (tenant): metrics group and fair share (default: the key's name)")
		priority = fs.String("priority", "", "critical, interactive or background (default: admission.default_priority)")
		models = fs.String("models", "", "comma-separated models the key may use (default: every model)")
		rpm = fs.Int64("rpm", 0, "requests per minute (default: no limit)")
		itpm = fs.Int64("itpm", 0, "input tokens per minute (default: no limit)")
		otpm = fs.Int64("otpm", 0, "output tokens per minute (default: no limit)")
		expires = fs.String("expires", "", "when the key stops working: a duration from now (e.g. 720h) or an RFC 3339 time (default: never)")
		disabled = fs.Bool("disabled", false, "make the key disabled, to enable later")
		spec = fs.String("spec", "", "more fields, as a JSON object merged into the request (any field of a config key, e.g. '{\"degrade\":false}')")
	case "rotate":
		grace = fs.Duration("grace", 0, "how long the old secret keeps working (at most 720h)")
	}
	// The name may come before or after the flags.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return helpOr2(err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	wantName := cmd != "list"
	if wantName && len(pos) != 1 || !wantName && len(pos) != 0 {
		fmt.Fprintf(stderr, "sluice keys %s: want %s, got %d arguments\n", cmd, map[bool]string{true: "one key NAME", false: "no arguments"}[wantName], len(pos))
		fs.Usage()
		return 2
	}
	if *admin == "" || *tokenEnv == "" {
		a, te, err := adminDefaults(*cfgPath)
		if err != nil {
			fmt.Fprintf(stderr, "sluice keys %s: --config: %v\n", cmd, err)
			return 2
		}
		if *admin == "" {
			*admin = a
		}
		if *tokenEnv == "" {
			*tokenEnv = te
		}
	}
	base, err := url.Parse(strings.TrimSuffix(*admin, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		fmt.Fprintf(stderr, "sluice keys %s: --admin %q is not an http:// or https:// URL; write e.g. http://%s\n", cmd, *admin, config.DefaultAdminListen)
		return 2
	}

	method, path := "GET", "/admin/keys"
	var body []byte
	if wantName {
		path += "/" + url.PathEscape(pos[0])
	}
	switch cmd {
	case "create":
		m := map[string]any{}
		if *spec != "" {
			if err := json.Unmarshal([]byte(*spec), &m); err != nil {
				fmt.Fprintf(stderr, "sluice keys create: --spec is not a JSON object: %v\n", err)
				return 2
			}
		}
		m["name"] = pos[0]
		put := func(k string, v any) { m[k] = v }
		if *team != "" {
			put("team", *team)
		}
		if *priority != "" {
			put("priority", *priority)
		}
		if *models != "" {
			put("models", strings.Split(*models, ","))
		}
		lim, _ := m["limits"].(map[string]any)
		if lim == nil {
			lim = map[string]any{}
		}
		for k, v := range map[string]int64{"rpm": *rpm, "itpm": *itpm, "otpm": *otpm} {
			if v != 0 {
				lim[k] = v // the gateway refuses 0 and below, saying why
			}
		}
		if len(lim) > 0 {
			m["limits"] = lim
		}
		if *expires != "" {
			if d, err := time.ParseDuration(*expires); err == nil {
				put("expires_at", time.Now().Add(d).UTC().Format(time.RFC3339))
			} else {
				put("expires_at", *expires)
			}
		}
		if *disabled {
			put("disabled", true)
		}
		method, path = "POST", "/admin/keys"
		body, _ = json.Marshal(m)
	case "rotate":
		method, path = "POST", path+"/rotate"
		body, _ = json.Marshal(map[string]string{"grace": grace.String()})
	case "revoke", "disable", "enable":
		method, path = "POST", path+"/"+cmd
	}

	req, err := http.NewRequest(method, base.String()+path, bytes.NewReader(body))
	if err != nil {
		fmt.Fprintf(stderr, "sluice keys %s: %v\n", cmd, err)
		return 2
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	token := os.Getenv(*tokenEnv)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "sluice keys %s: the admin API at %s did not answer: %v\n(is the gateway running? its admin address is admin_listen; pass --admin URL or set SLUICE_ADMIN_URL)\n", cmd, base.Redacted(), err)
		return 1
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		fmt.Fprintf(stderr, "sluice keys %s: reading the answer: %v\n", cmd, err)
		return 1
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		fmt.Fprintf(stderr, "sluice keys %s: the admin API answered %s, not the key API's JSON: %.200s\n", cmd, resp.Status, data)
		return 1
	}
	if resp.StatusCode/100 != 2 {
		msg := ""
		if e, ok := out["error"].(map[string]any); ok {
			msg, _ = e["message"].(string)
		}
		fmt.Fprintf(stderr, "sluice keys %s: %s: %s\n", cmd, resp.Status, msg)
		if resp.StatusCode == http.StatusUnauthorized && token == "" {
			fmt.Fprintf(stderr, "(no token sent: %s is empty; export the admin token in it, or pass --token-env NAME)\n", *tokenEnv)
		}
		return 1
	}
	if *asJSON {
		pretty, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintf(stdout, "%s\n", pretty)
		return 0
	}
	if w, _ := out["warning"].(string); w != "" {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	switch cmd {
	case "list":
		keys, _ := out["keys"].([]any)
		tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tSOURCE\tSTATUS\tTEAM\tPRIORITY\tMODELS\tLIMITS\tEXPIRES")
		for _, k := range keys {
			v, _ := k.(map[string]any)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", text(v["name"]), text(v["source"]), text(v["status"]), text(v["team"]),
				text(v["priority"]), text(v["models"]), text(v["limits"]), text(v["expires_at"]))
		}
		tw.Flush()
		if s, _ := out["store"].(string); s != "" {
			fmt.Fprintf(stdout, "\nkeys made at run time live in %s\n", s)
		} else {
			fmt.Fprintln(stdout, "\nthis gateway has no key store (store: or state.dir:), so it has only the config's keys")
		}
	case "create", "rotate":
		key, _ := out["key"].(map[string]any)
		verb := "created"
		if cmd == "rotate" {
			verb = "rotated"
		}
		fmt.Fprintf(stdout, "key %s %s.\nsecret (shown this once; give it to the client):\n  %s\n\n", text(key["name"]), verb, text(out["secret"]))
		showKey(stdout, key)
	case "revoke":
		fmt.Fprintf(stdout, "key %s revoked: its secrets no longer work.\n", pos[0])
	case "disable", "enable":
		fmt.Fprintf(stdout, "key %s %sd.\n\n", pos[0], cmd)
		showKey(stdout, out)
	default:
		showKey(stdout, out)
	}
	return 0
}

// adminDefaults are the admin URL and the token's variable when the
// flags do not name them: $SLUICE_ADMIN_URL, else the config's
// admin_listen (a wildcard address asked on loopback), else the default
// admin_listen; SLUICE_ADMIN_TOKEN when it is set, else the config's
// admin.token_env, else SLUICE_ADMIN_TOKEN.
func adminDefaults(path string) (adminURL, tokenEnv string, err error) {
	adminURL, tokenEnv = os.Getenv("SLUICE_ADMIN_URL"), "SLUICE_ADMIN_TOKEN"
	listen := config.DefaultAdminListen
	if path != "" {
		c, err := config.Load(path)
		if err != nil {
			return "", "", err
		}
		if c.AdminListen != "" {
			listen = c.AdminListen
		}
		if c.Admin.TokenEnv != "" && os.Getenv("SLUICE_ADMIN_TOKEN") == "" {
			tokenEnv = c.Admin.TokenEnv
		}
	}
	if adminURL == "" {
		host, port, err := net.SplitHostPort(listen)
		if err != nil {
			return "", "", fmt.Errorf("admin_listen %q is not host:port", listen)
		}
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host = "127.0.0.1"
		}
		adminURL = "http://" + net.JoinHostPort(host, port)
	}
	return adminURL, tokenEnv, nil
}

// showKey prints a key's fields, one a line, name first.
func showKey(w io.Writer, key map[string]any) {
	names := make([]string, 0, len(key))
	for k := range key {
		if k != "name" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "name:\t%s\n", text(key["name"]))
	for _, k := range names {
		fmt.Fprintf(tw, "%s:\t%s\n", k, text(key[k]))
	}
	tw.Flush()
}

// text is a JSON value as one short line: lists comma-separated, objects
// as k=v, nothing as "-".
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		if x == "" {
			return "-"
		}
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = text(e)
		}
		return strings.Join(parts, ",")
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + text(x[k])
		}
		return strings.Join(parts, " ")
	case float64:
		return fmt.Sprint(x)
	}
	return fmt.Sprint(v)
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}
