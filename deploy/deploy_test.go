package deploy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-gw/sluice/internal/config"
)

// The names the files share: compose services, Kubernetes objects, the
// config path inside the image.
const (
	configPath   = "/etc/sluice/sluice.yaml"
	k8sConfigMap = "sluice-config"
	k8sSecret    = "sluice-provider-keys"
)

var sluiceServices = []string{"sluice-1", "sluice-2", "sluice-3"}

// loadConfig parses a Sluice config as `sluice serve --check` does, with
// placeholder provider keys in the environment.
func loadConfig(t *testing.T, data []byte, name string) *config.Config {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", "placeholder")
	t.Setenv("ANTHROPIC_API_KEY", "placeholder")
	// The compose config falls back to the mock service for an unset
	// MOCK_BASE_URL; make sure the host's environment does not decide.
	t.Setenv("MOCK_BASE_URL", "")
	os.Unsetenv("MOCK_BASE_URL")
	c, err := config.Parse(data, name)
	if err != nil {
		t.Fatalf("%s does not validate:\n%v", name, err)
	}
	if err := c.CheckEnv(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return c
}

func port(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return n
}

// hostPort returns a URL's host and port, the port defaulting by scheme.
func hostPort(t *testing.T, raw string) (string, int) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("url %q: %v", raw, err)
	}
	p := u.Port()
	if p == "" {
		p = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	n, _ := strconv.Atoi(p)
	return u.Hostname(), n
}

// checkFleetConfig checks what every deployed config needs: listening
// beyond loopback inside its container, a shared store, a drain.
func checkFleetConfig(t *testing.T, c *config.Config, name string) {
	t.Helper()
	for _, addr := range []string{c.Listen, c.AdminListen} {
		if h, _, _ := net.SplitHostPort(addr); h != "0.0.0.0" && h != "" && h != "::" {
			t.Errorf("%s: %s listens on %s only; in a container it must listen on all interfaces", name, addr, h)
		}
	}
	if !strings.HasPrefix(c.Store, "redis://") && !strings.HasPrefix(c.Store, "rediss://") {
		t.Errorf("%s: store %q is not a Redis URL; the replicas would not share state", name, c.Store)
	}
	if c.Server.DrainDelay <= 0 || c.Server.ShutdownGrace <= 0 {
		t.Errorf("%s: drain_delay %v, shutdown_grace %v; want both set", name, c.Server.DrainDelay, c.Server.ShutdownGrace)
	}
}

func drainTotal(c *config.Config) time.Duration {
	return c.Server.DrainDelay.D() + c.Server.ShutdownGrace.D()
}

// providerHost returns the host and port of the named provider's base_url.
func providerHost(t *testing.T, c *config.Config, name string) (string, int) {
	t.Helper()
	p, ok := c.Provider(name)
	if !ok {
		t.Fatalf("no provider %q", name)
	}
	return hostPort(t, p.BaseURL)
}

func keyEnvs(c *config.Config) []string {
	var out []string
	for _, p := range c.Providers {
		if p.APIKeyEnv != "" {
			out = append(out, p.APIKeyEnv)
		}
	}
	return out
}

// --- generic YAML navigation ---

func readDocs(t *testing.T, file string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
	if len(docs) == 0 {
		t.Fatalf("%s: no YAML documents", file)
	}
	return docs
}

func readDoc(t *testing.T, file string) map[string]any {
	t.Helper()
	docs := readDocs(t, file)
	if len(docs) != 1 {
		t.Fatalf("%s: %d documents, want 1", file, len(docs))
	}
	return docs[0]
}

// get walks v by map keys and list indexes ("0", "1", ...).
func get(v any, keys ...string) any {
	for _, k := range keys {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func str(v any, keys ...string) string {
	s, _ := get(v, keys...).(string)
	return s
}

func num(v any, keys ...string) int {
	n, _ := get(v, keys...).(int)
	return n
}

func list(v any, keys ...string) []any {
	l, _ := get(v, keys...).([]any)
	return l
}

func strings_(v any, keys ...string) []string {
	var out []string
	for _, x := range list(v, keys...) {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func labels(v any, keys ...string) map[string]string {
	out := map[string]string{}
	m, _ := get(v, keys...).(map[string]any)
	for k, x := range m {
		out[k] = fmt.Sprint(x)
	}
	return out
}

// selects reports whether a selector picks pods carrying podLabels.
func selects(selector, podLabels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if podLabels[k] != v {
			return false
		}
	}
	return true
}

// --- Kubernetes ---

type k8sObjects map[string]map[string]any // "Kind/name" → object

func (o k8sObjects) must(t *testing.T, kind, name string) map[string]any {
	t.Helper()
	obj, ok := o[kind+"/"+name]
	if !ok {
		t.Fatalf("k8s: no %s %s", kind, name)
	}
	return obj
}

func readK8s(t *testing.T) (k8sObjects, *config.Config) {
	t.Helper()
	kust := readDoc(t, "k8s/kustomization.yaml")
	resources := strings_(kust, "resources")
	files, _ := filepath.Glob("k8s/*.yaml")
	var manifests []string
	for _, f := range files {
		if filepath.Base(f) != "kustomization.yaml" {
			manifests = append(manifests, filepath.Base(f))
		}
	}
	slices.Sort(resources)
	if !slices.Equal(resources, manifests) {
		t.Errorf("k8s/kustomization.yaml resources %v, files %v: kubectl apply -k and -f would differ", resources, manifests)
	}
	objs := k8sObjects{}
	for _, f := range manifests {
		for _, doc := range readDocs(t, filepath.Join("k8s", f)) {
			kind, name := str(doc, "kind"), str(doc, "metadata", "name")
			if kind == "" || name == "" || str(doc, "apiVersion") == "" {
				t.Errorf("k8s/%s: a document without apiVersion, kind or metadata.name", f)
				continue
			}
			if _, dup := objs[kind+"/"+name]; dup {
				t.Errorf("k8s/%s: %s %s defined twice", f, kind, name)
			}
			objs[kind+"/"+name] = doc
		}
	}
	cm := objs.must(t, "ConfigMap", k8sConfigMap)
	c := loadConfig(t, []byte(str(cm, "data", path.Base(configPath))), "k8s/configmap.yaml:data."+path.Base(configPath))
	return objs, c
}

// containerPort resolves a probe's or Service's port, by name or number.
func containerPort(ctr any, p any) int {
	if n, ok := p.(int); ok {
		return n
	}
	for _, cp := range list(ctr, "ports") {
		if str(cp, "name") == fmt.Sprint(p) {
			return num(cp, "containerPort")
		}
	}
	return -1
}

func TestKubernetes(t *testing.T) {
	objs, c := readK8s(t)
	checkFleetConfig(t, c, "k8s ConfigMap")
	clientPort, adminPort := port(t, c.Listen), port(t, c.AdminListen)

	dep := objs.must(t, "Deployment", "sluice")
	if got := num(dep, "spec", "replicas"); got != 3 {
		t.Errorf("Deployment sluice: replicas %d, want 3", got)
	}
	podLabels := labels(dep, "spec", "template", "metadata", "labels")
	depSelector := labels(dep, "spec", "selector", "matchLabels")
	if !selects(depSelector, podLabels) {
		t.Errorf("Deployment sluice: selector %v does not match its pod labels %v", depSelector, podLabels)
	}
	pod := get(dep, "spec", "template", "spec")
	if get(pod, "securityContext", "runAsNonRoot") != true {
		t.Error("Deployment sluice: pod securityContext.runAsNonRoot is not true")
	}
	if uid := num(pod, "securityContext", "runAsUser"); uid == 0 {
		t.Error("Deployment sluice: pod securityContext.runAsUser is root or unset")
	}
	grace := time.Duration(num(pod, "terminationGracePeriodSeconds")) * time.Second
	if grace < drainTotal(c) {
		t.Errorf("Deployment sluice: terminationGracePeriodSeconds %v < drain_delay+shutdown_grace %v: the kubelet would kill requests Sluice is draining", grace, drainTotal(c))
	}
	ctrs := list(pod, "containers")
	if len(ctrs) != 1 {
		t.Fatalf("Deployment sluice: %d containers, want 1", len(ctrs))
	}
	ctr := ctrs[0]
	if got, want := strings_(ctr, "args"), []string{"serve", "--config", configPath}; !slices.Equal(got, want) {
		t.Errorf("Deployment sluice: args %v, want %v", got, want)
	}
	if got := containerPort(ctr, "client"); got != clientPort {
		t.Errorf("Deployment sluice: containerPort client %d, config listen port %d", got, clientPort)
	}
	if got := containerPort(ctr, "admin"); got != adminPort {
		t.Errorf("Deployment sluice: containerPort admin %d, config admin_listen port %d", got, adminPort)
	}
	for probe, want := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz"} {
		if got := str(ctr, probe, "httpGet", "path"); got != want {
			t.Errorf("Deployment sluice: %s path %q, want %q", probe, got, want)
		}
		if got := containerPort(ctr, get(ctr, probe, "httpGet", "port")); got != adminPort {
			t.Errorf("Deployment sluice: %s on port %d, want the admin port %d", probe, got, adminPort)
		}
	}
	sc := get(ctr, "securityContext")
	if get(sc, "readOnlyRootFilesystem") != true || get(sc, "allowPrivilegeEscalation") != false {
		t.Error("Deployment sluice: container needs readOnlyRootFilesystem: true and allowPrivilegeEscalation: false")
	}
	if got := strings_(sc, "capabilities", "drop"); !slices.Equal(got, []string{"ALL"}) {
		t.Errorf("Deployment sluice: capabilities.drop %v, want [ALL]", got)
	}
	for _, r := range []string{"requests", "limits"} {
		if str(ctr, "resources", r, "memory") == "" {
			t.Errorf("Deployment sluice: no resources.%s.memory", r)
		}
	}
	// The config comes from the ConfigMap, mounted where args say.
	mounted := false
	for _, vm := range list(ctr, "volumeMounts") {
		if str(vm, "mountPath") != path.Dir(configPath) {
			continue
		}
		for _, v := range list(pod, "volumes") {
			if str(v, "name") == str(vm, "name") && str(v, "configMap", "name") == k8sConfigMap {
				mounted = true
			}
		}
	}
	if !mounted {
		t.Errorf("Deployment sluice: ConfigMap %s is not mounted at %s", k8sConfigMap, path.Dir(configPath))
	}
	// Provider keys come from the Secret, never the ConfigMap.
	env := map[string]any{}
	for _, e := range list(ctr, "env") {
		env[str(e, "name")] = e
	}
	for _, name := range keyEnvs(c) {
		if got := str(env[name], "valueFrom", "secretKeyRef", "name"); got != k8sSecret {
			t.Errorf("Deployment sluice: %s (a provider's api_key_env) is not taken from Secret %s", name, k8sSecret)
		}
	}

	pdb := objs.must(t, "PodDisruptionBudget", "sluice")
	if sel := labels(pdb, "spec", "selector", "matchLabels"); !selects(sel, podLabels) {
		t.Errorf("PodDisruptionBudget sluice: selector %v does not match the pods %v", sel, podLabels)
	}
	minAvail, maxUnavail := get(pdb, "spec", "minAvailable"), get(pdb, "spec", "maxUnavailable")
	if !(minAvail == 2 || maxUnavail == 1) {
		t.Errorf("PodDisruptionBudget sluice: minAvailable %v, maxUnavailable %v; want minAvailable 2 or maxUnavailable 1", minAvail, maxUnavail)
	}

	svc := objs.must(t, "Service", "sluice")
	if sel := labels(svc, "spec", "selector"); !selects(sel, podLabels) {
		t.Errorf("Service sluice: selector %v does not match the pods %v", sel, podLabels)
	}
	var svcPorts []int
	for _, p := range list(svc, "spec", "ports") {
		svcPorts = append(svcPorts, containerPort(ctr, get(p, "targetPort")))
		if num(p, "port") != clientPort {
			t.Errorf("Service sluice: port %d, want the client port %d", num(p, "port"), clientPort)
		}
	}
	if !slices.Equal(svcPorts, []int{clientPort}) {
		t.Errorf("Service sluice: targets container ports %v, want only the client port %d", svcPorts, clientPort)
	}
	admin := objs.must(t, "Service", "sluice-admin")
	if sel := labels(admin, "spec", "selector"); !selects(sel, podLabels) {
		t.Errorf("Service sluice-admin: selector %v does not match the pods %v", sel, podLabels)
	}

	// No Service reaches the admin port from outside the cluster, and
	// every Service selects some Deployment's pods.
	for key, obj := range objs {
		if str(obj, "kind") == "Service" {
			typ := str(obj, "spec", "type")
			external := typ == "LoadBalancer" || typ == "NodePort"
			for _, p := range list(obj, "spec", "ports") {
				if selects(labels(obj, "spec", "selector"), podLabels) && containerPort(ctr, get(p, "targetPort")) == adminPort && external {
					t.Errorf("%s exposes the admin port outside the cluster (type %s)", key, typ)
				}
			}
			found := false
			for _, d := range objs {
				if str(d, "kind") == "Deployment" && selects(labels(obj, "spec", "selector"), labels(d, "spec", "template", "metadata", "labels")) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s selects no Deployment's pods", key)
			}
		}
		if str(obj, "kind") == "Deployment" {
			if !selects(labels(obj, "spec", "selector", "matchLabels"), labels(obj, "spec", "template", "metadata", "labels")) {
				t.Errorf("%s: selector does not match its pod labels", key)
			}
			if get(obj, "spec", "template", "spec", "securityContext", "runAsNonRoot") != true {
				t.Errorf("%s: pod securityContext.runAsNonRoot is not true", key)
			}
		}
	}

	// The store and the fake provider are the Services of that name.
	storeHost, storePort := hostPort(t, c.Store)
	redisSvc := objs.must(t, "Service", storeHost)
	if got := num(redisSvc, "spec", "ports", "0", "port"); got != storePort {
		t.Errorf("Service %s: port %d, store names %d", storeHost, got, storePort)
	}
	redis := objs.must(t, "Deployment", "redis")
	if got := num(redis, "spec", "replicas"); got != 1 {
		t.Errorf("Deployment redis: replicas %d, want 1", got)
	}
	checkNoPersistence(t, "Deployment redis", strings_(redis, "spec", "template", "spec", "containers", "0", "args"))
	mockHost, mockPort := providerHost(t, c, "mock")
	mockSvc := objs.must(t, "Service", mockHost)
	if got := num(mockSvc, "spec", "ports", "0", "port"); got != mockPort {
		t.Errorf("Service %s: port %d, provider mock calls %d", mockHost, got, mockPort)
	}
	mockArgs := strings_(objs.must(t, "Deployment", "sluice-mock"), "spec", "template", "spec", "containers", "0", "args")
	if got := flagValue(mockArgs, "--listen"); got == "" || port(t, got) != mockPort {
		t.Errorf("Deployment sluice-mock: args %v; want mock --listen on port %d", mockArgs, mockPort)
	}
}

func checkNoPersistence(t *testing.T, what string, args []string) {
	t.Helper()
	if flagValue(args, "--save") != "" || flagValue(args, "--appendonly") != "no" || !slices.Contains(args, "--save") {
		t.Errorf("%s: args %v; want --save '' --appendonly no", what, args)
	}
}

// flagValue returns the argument after name in args.
func flagValue(args []string, name string) string {
	if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// --- compose ---

func TestCompose(t *testing.T) {
	data, err := os.ReadFile("sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := loadConfig(t, data, "sluice.yaml")
	checkFleetConfig(t, c, "sluice.yaml")
	clientPort, adminPort := port(t, c.Listen), port(t, c.AdminListen)

	compose := readDoc(t, "compose.yaml")
	services, _ := get(compose, "services").(map[string]any)
	for _, name := range []string{"redis", "mock", "lb", "prometheus", "grafana"} {
		if services[name] == nil {
			t.Errorf("compose: no service %s", name)
		}
	}
	var serving []string
	for name, svc := range services {
		if cmd := strings_(svc, "command"); len(cmd) > 0 && cmd[0] == "serve" {
			serving = append(serving, name)
		}
	}
	slices.Sort(serving)
	if !slices.Equal(serving, sluiceServices) {
		t.Fatalf("compose: services running sluice serve %v, want %v", serving, sluiceServices)
	}
	for _, name := range sluiceServices {
		svc := services[name]
		checkBuild(t, name, svc)
		if got, want := strings_(svc, "command"), []string{"serve", "--config", configPath}; !slices.Equal(got, want) {
			t.Errorf("compose %s: command %v, want %v", name, got, want)
		}
		if !slices.Contains(strings_(svc, "volumes"), "./sluice.yaml:"+configPath+":ro") {
			t.Errorf("compose %s: deploy/sluice.yaml is not mounted at %s", name, configPath)
		}
		hc := strings.Join(strings_(svc, "healthcheck", "test"), " ")
		if !strings.Contains(hc, fmt.Sprintf(":%d/readyz", adminPort)) {
			t.Errorf("compose %s: healthcheck %q does not ask the admin port %d for /readyz", name, hc, adminPort)
		}
		if d, err := time.ParseDuration(str(svc, "stop_grace_period")); err != nil || d < drainTotal(c) {
			t.Errorf("compose %s: stop_grace_period %q, want at least drain_delay+shutdown_grace %v", name, str(svc, "stop_grace_period"), drainTotal(c))
		}
		for _, env := range keyEnvs(c) {
			if get(svc, "environment", env) == nil {
				t.Errorf("compose %s: %s (a provider's api_key_env) is not in its environment; serve would refuse to start", name, env)
			}
		}
		for _, dep := range []string{"redis", "mock"} {
			if str(svc, "depends_on", dep, "condition") != "service_healthy" {
				t.Errorf("compose %s: does not wait for %s to be healthy", name, dep)
			}
		}
		if get(svc, "ports") != nil {
			t.Errorf("compose %s: publishes ports; clients go through lb, and the admin port stays private", name)
		}
	}

	storeHost, _ := hostPort(t, c.Store)
	if services[storeHost] == nil {
		t.Errorf("sluice.yaml: store host %q is not a compose service", storeHost)
	}
	checkNoPersistence(t, "compose redis", strings_(services["redis"], "command"))

	mockHost, mockPort := providerHost(t, c, "mock")
	if services[mockHost] == nil {
		t.Fatalf("sluice.yaml: provider mock calls %q, not a compose service", mockHost)
	}
	mockCmd := strings_(services[mockHost], "command")
	checkBuild(t, mockHost, services[mockHost])
	if len(mockCmd) == 0 || mockCmd[0] != "mock" {
		t.Errorf("compose %s: command %v, want sluice mock", mockHost, mockCmd)
	} else if l := flagValue(mockCmd, "--listen"); l == "" || port(t, l) != mockPort {
		t.Errorf("compose %s: command %v; want --listen on port %d, where provider mock calls it", mockHost, mockCmd, mockPort)
	}

	// Prometheus scrapes exactly the replicas' admin ports.
	var want []string
	for _, s := range sluiceServices {
		want = append(want, fmt.Sprintf("%s:%d", s, adminPort))
	}
	prom := readDoc(t, "prometheus.yml")
	var targets []string
	for _, job := range list(prom, "scrape_configs") {
		for _, sc := range list(job, "static_configs") {
			targets = append(targets, strings_(sc, "targets")...)
		}
	}
	slices.Sort(targets)
	if !slices.Equal(targets, want) {
		t.Errorf("prometheus.yml: targets %v, want %v", targets, want)
	}
	if !slices.Contains(strings_(services["prometheus"], "volumes"), "./prometheus.yml:/etc/prometheus/prometheus.yml:ro") {
		t.Error("compose prometheus: prometheus.yml is not mounted")
	}

	// nginx balances over exactly the replicas' client ports.
	conf, err := os.ReadFile("nginx/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	var upstreams []string
	for _, block := range regexp.MustCompile(`(?s)upstream\s+\S+\s*\{(.*?)\}`).FindAllStringSubmatch(string(conf), -1) {
		for _, m := range regexp.MustCompile(`(?m)^\s*server\s+([^\s;]+)`).FindAllStringSubmatch(block[1], -1) {
			upstreams = append(upstreams, m[1])
		}
	}
	slices.Sort(upstreams)
	want = want[:0]
	for _, s := range sluiceServices {
		want = append(want, fmt.Sprintf("%s:%d", s, clientPort))
	}
	if !slices.Equal(upstreams, want) {
		t.Errorf("nginx.conf: upstream servers %v, want %v", upstreams, want)
	}
	if !strings.Contains(string(conf), "proxy_buffering off") {
		t.Error("nginx.conf: proxy_buffering is on; streams would reach clients in bursts")
	}

	checkGrafana(t, services)
}

// checkBuild wants a sluice service built from deploy/Dockerfile as the
// shared image.
func checkBuild(t *testing.T, name string, svc any) {
	t.Helper()
	if str(svc, "image") != "sluice:local" || str(svc, "build", "context") != ".." || str(svc, "build", "dockerfile") != "deploy/Dockerfile" {
		t.Errorf("compose %s: want image sluice:local built from deploy/Dockerfile in the repository root", name)
	}
}

func checkGrafana(t *testing.T, services map[string]any) {
	t.Helper()
	ds := readDoc(t, "grafana/provisioning/datasources/prometheus.yaml")
	host, p := hostPort(t, str(ds, "datasources", "0", "url"))
	if services[host] == nil || p != 9090 {
		t.Errorf("grafana datasource: %s:%d is not the prometheus service", host, p)
	}
	uid := str(ds, "datasources", "0", "uid")
	dp := readDoc(t, "grafana/provisioning/dashboards/sluice.yaml")
	dashDir := str(dp, "providers", "0", "options", "path")
	if !slices.Contains(strings_(services["grafana"], "volumes"), "./grafana/dashboards:"+dashDir+":ro") ||
		!slices.Contains(strings_(services["grafana"], "volumes"), "./grafana/provisioning:/etc/grafana/provisioning:ro") {
		t.Errorf("compose grafana: provisioning or dashboards (%s) not mounted", dashDir)
	}

	data, err := os.ReadFile("grafana/dashboards/sluice.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title      string
			Datasource struct{ UID string }
			Targets    []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("sluice.json: %v", err)
	}
	// Every metric the dashboard asks for is one Sluice registers.
	registered := registeredMetrics(t)
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Datasource.UID != uid {
			t.Errorf("sluice.json %q: data source %q, provisioned %q", p.Title, p.Datasource.UID, uid)
		}
		for _, tg := range p.Targets {
			for _, m := range metricName.FindAllString(tg.Expr, -1) {
				base, ok := registered(m)
				if !ok {
					t.Errorf("sluice.json %q: %s is not a metric package metrics registers", p.Title, m)
				}
				used[base] = true
			}
		}
	}
	for _, m := range []string{"sluice_requests_total", "sluice_request_duration_seconds", "sluice_queue_depth", "sluice_breaker_state", "sluice_budget_remaining"} {
		if !used[m] {
			t.Errorf("sluice.json: no panel shows %s", m)
		}
	}
}

// metricName finds Sluice's metric names in a query.
var metricName = regexp.MustCompile(`sluice_[a-z_]+`)

// registeredMetrics returns a check that a name in a query (a histogram's
// _bucket, _count or _sum included) is a metric package metrics
// registers, and its base name.
func registeredMetrics(t *testing.T) func(string) (string, bool) {
	t.Helper()
	var src []byte
	files, _ := filepath.Glob("../internal/server/metrics/*.go")
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			b, _ := os.ReadFile(f)
			src = append(src, b...)
		}
	}
	if len(src) == 0 {
		t.Fatal("no source in ../internal/server/metrics to check metric names against")
	}
	return func(m string) (string, bool) {
		base := m
		for _, suf := range []string{"_bucket", "_count", "_sum"} {
			if b, ok := strings.CutSuffix(m, suf); ok && bytes.Contains(src, []byte(`"`+b+`"`)) {
				base = b
			}
		}
		return base, bytes.Contains(src, []byte(`"`+base+`"`))
	}
}

// --- Alert rules ---

// The alert rules name only metrics Sluice registers, Prometheus in
// compose loads them, and promtool finds them well-formed and passes
// their unit tests (alerts_test.yml: each rings on a ramp, and a steady
// baseline does not). Without promtool the last part is skipped, except
// in CI, which installs it.
func TestAlertRules(t *testing.T) {
	data, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	if err := yaml.Unmarshal(data, &rules); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	registered := registeredMetrics(t)
	var alerts []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			for _, m := range metricName.FindAllString(r.Expr, -1) {
				if _, ok := registered(m); !ok {
					t.Errorf("alerts.yml %s: %s is not a metric package metrics registers", r.Alert, m)
				}
			}
		}
	}
	tests, _ := os.ReadFile("alerts_test.yml")
	for _, a := range alerts {
		if !bytes.Contains(tests, []byte("alertname: "+a+"\n")) {
			t.Errorf("alerts_test.yml: no test for %s", a)
		}
	}
	prom := readDoc(t, "prometheus.yml")
	if !slices.Contains(strings_(prom, "rule_files"), "/etc/prometheus/alerts.yml") {
		t.Error("prometheus.yml: rule_files does not load /etc/prometheus/alerts.yml")
	}
	compose := readDoc(t, "compose.yaml")
	if !slices.Contains(strings_(compose, "services", "prometheus", "volumes"), "./alerts.yml:/etc/prometheus/alerts.yml:ro") {
		t.Error("compose prometheus: alerts.yml is not mounted")
	}

	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed; .ci/run installs it from Debian's prometheus package")
		}
		t.Skip("promtool is not installed; the rules' own checks and unit tests need it (see .ci/run for how CI gets it)")
	}
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// --- Dockerfiles ---

type instr struct{ op, args string }

// finalStage returns the instructions after the last FROM, joining
// continuation lines, and every FROM's image.
func finalStage(t *testing.T, file string) (from []string, stage []instr) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var all []instr
	cur := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur == "") {
			continue
		}
		if l, ok := strings.CutSuffix(line, `\`); ok {
			cur += l + " "
			continue
		}
		cur += line
		op, args, _ := strings.Cut(cur, " ")
		all = append(all, instr{strings.ToUpper(op), strings.TrimSpace(args)})
		cur = ""
	}
	for _, in := range all {
		if in.op == "FROM" {
			from = append(from, strings.Fields(in.args)[0])
			stage = nil
			continue
		}
		stage = append(stage, in)
	}
	return from, stage
}

func jsonArgs(t *testing.T, file, s string) []string {
	t.Helper()
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Errorf("%s: %q is not the exec (JSON) form", file, s)
	}
	return out
}

func TestDockerfiles(t *testing.T) {
	data, err := os.ReadFile("sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := loadConfig(t, data, "sluice.yaml")
	wantExpose := []string{strconv.Itoa(port(t, c.Listen)), strconv.Itoa(port(t, c.AdminListen))}

	for file, base := range map[string]string{"Dockerfile": "gcr.io/distroless/static:nonroot", "Dockerfile.prebuilt": "scratch"} {
		from, stage := finalStage(t, file)
		if len(from) == 0 || from[len(from)-1] != base {
			t.Errorf("%s: final image %v, want %s", file, from, base)
		}
		got := map[string][]string{}
		copied := map[string]bool{}
		for _, in := range stage {
			got[in.op] = append(got[in.op], in.args)
			if in.op == "COPY" {
				f := strings.Fields(in.args)
				copied[f[len(f)-1]] = true
			}
		}
		users := got["USER"]
		if len(users) == 0 {
			t.Errorf("%s: no USER in the final stage; the image would run as root", file)
		} else {
			u := users[len(users)-1]
			uid, gid, _ := strings.Cut(u, ":")
			n, err := strconv.Atoi(uid)
			g, gerr := strconv.Atoi(gid)
			if err != nil || n == 0 || (gid != "" && (gerr != nil || g == 0)) {
				t.Errorf("%s: USER %s; want a numeric non-root user such as 65532:65532 (runAsNonRoot cannot check names)", file, u)
			}
		}
		if e := strings.Fields(strings.Join(got["EXPOSE"], " ")); !slices.Equal(e, wantExpose) {
			t.Errorf("%s: EXPOSE %v, want the config's ports %v", file, e, wantExpose)
		}
		if ep := got["ENTRYPOINT"]; len(ep) != 1 || !slices.Equal(jsonArgs(t, file, ep[0]), []string{"/sluice"}) {
			t.Errorf("%s: ENTRYPOINT %v, want [\"/sluice\"] (subcommands are the first argument)", file, ep)
		}
		if cmd := got["CMD"]; len(cmd) != 1 || !slices.Equal(jsonArgs(t, file, cmd[0]), []string{"serve", "--config", configPath}) {
			t.Errorf("%s: CMD %v, want serve --config %s", file, cmd, configPath)
		}
		for _, p := range []string{configPath, "/sluice", "/probe"} {
			if !copied[p] && !(p != configPath && copied["/"]) {
				t.Errorf("%s: nothing is copied to %s", file, p)
			}
		}
		hc := strings.Join(got["HEALTHCHECK"], " ")
		if !strings.Contains(hc, fmt.Sprintf(":%s/readyz", wantExpose[1])) {
			t.Errorf("%s: HEALTHCHECK %q does not ask the admin port for /readyz", file, hc)
		}
		if base == "scratch" && !copied["/etc/ssl/certs/ca-certificates.crt"] {
			t.Errorf("%s: scratch has no CA roots; copy ca-certificates.crt to /etc/ssl/certs", file)
		}
	}

	df, _ := os.ReadFile("Dockerfile")
	for _, want := range []string{"FROM golang:1.26 AS build", "CGO_ENABLED=0", "-trimpath", `-ldflags "-s -w"`, "./cmd/sluice-probe"} {
		if !bytes.Contains(df, []byte(want)) {
			t.Errorf("Dockerfile: no %q", want)
		}
	}
}

// TestImage builds the image from host binaries with build-local.sh and
// runs serve --check inside it. It needs a Docker daemon, so it runs
// only with SLUICE_DOCKER=1.
func TestImage(t *testing.T) {
	if os.Getenv("SLUICE_DOCKER") != "1" {
		t.Skip("set SLUICE_DOCKER=1 to build and check the image (needs a Docker daemon)")
	}
	cmd := exec.Command("./build-local.sh", "sluice:test")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("build-local.sh: %v", err)
	}
}
