package scenario

import (
	"strings"
	"testing"
	"time"
)

const fleetFile = `providers:
  - {name: llm, kind: openai, base_url: "http://127.0.0.1:8001/v1"}
models:
  - {name: chat, targets: [{provider: llm, model: m}]}
scenario:
  duration: 10s
  clients: {model: chat, rate: [{at: 0s, rps: 5}]}
  upstreams: {llm: {}}
  FLEET
  policies:
    - name: local
    - name: shared
      gateway: {store: "redis://sim:6379/0"}
`

func TestFleetSection(t *testing.T) {
	f, err := Parse([]byte(strings.Replace(fleetFile, "FLEET", "fleet: {replicas: 3, store: {down: [{start: 2s, end: 4s}]}}", 1)), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fl := f.Scenario.Fleet
	if fl.Size() != 3 || fl.StoreLatency() != time.Millisecond || fl.StoreUp(3*time.Second) || !fl.StoreUp(4*time.Second) {
		t.Errorf("fleet: %+v", fl)
	}
	f, err = Parse([]byte(strings.Replace(fleetFile, "FLEET", "", 1)), "f.yaml")
	if err != nil || f.Scenario.Fleet.Size() != 1 {
		t.Fatalf("no fleet: %v, %+v", err, f.Scenario.Fleet)
	}
	for _, c := range []struct{ fleet, want string }{
		{"fleet: {replicas: -1}", "fleet.replicas"},
		{"fleet: {replicas: 3, balance: least_conn}", "fleet.balance"},
		{"fleet: {replicas: 3, store: {latency: -1ms}}", "fleet.store.latency"},
		{"fleet: {replicas: 3, store: {down: [{start: 5s, end: 2s}]}}", "fleet.store.down[0]"},
		{"fleet: {replicas: 3, lb: random}", "lb"},
	} {
		_, err := Parse([]byte(strings.Replace(fleetFile, "FLEET", c.fleet, 1)), "f.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %s", c.fleet, err, c.want)
		}
	}
}
