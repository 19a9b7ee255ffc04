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

func TestFleetJoinLeave(t *testing.T) {
	f, err := Parse([]byte(strings.Replace(fleetFile, "FLEET", "fleet: {replicas: 2, heartbeat: 500ms, join: [{at: 2s, replicas: 2}], leave: [{at: 5s, replicas: 3}]}", 1)), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fl := f.Scenario.Fleet
	if fl.Size() != 2 || fl.Slots() != 4 || !fl.Changes() || fl.HeartbeatEvery() != 500*time.Millisecond {
		t.Errorf("fleet: %+v", fl)
	}
	if d := (Fleet{}).HeartbeatEvery(); d != time.Second {
		t.Errorf("default heartbeat %v", d)
	}
	for _, c := range []struct{ fleet, want string }{
		{"fleet: {replicas: 2, join: [{at: 2s}]}", "fleet.join[0]: replicas 0; give how many replicas (at least 1) start at 2s"},
		{"fleet: {replicas: 2, leave: [{at: 2s, replicas: -1}]}", "fleet.leave[0]: replicas -1"},
		{"fleet: {replicas: 2, join: [{at: 0s, replicas: 1}]}", "fleet.join[0]: at 0s is outside the run"},
		{"fleet: {replicas: 2, leave: [{at: 10s, replicas: 1}]}", "fleet.leave[0]: at 10s is outside the run"},
		{"fleet: {replicas: 2, leave: [{at: 3s, replicas: 2}]}", "fleet.leave[0]: at 3s it leaves 0 replicas; at least one must stay"},
		{"fleet: {replicas: 2, join: [{at: 4s, replicas: 1}], leave: [{at: 3s, replicas: 2}]}", "fleet.leave[0]: at 3s it leaves 0"},
		{"fleet: {replicas: 2, heartbeat: -1s}", "fleet.heartbeat: -1s; give a positive interval"},
		{"fleet: {replicas: 2, join: [{at: 2s, replicas: 1, after: 1s}]}", "after"},
	} {
		_, err := Parse([]byte(strings.Replace(fleetFile, "FLEET", c.fleet, 1)), "f.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.fleet, err, c.want)
		}
	}
	// A join before a leave at the same instant counts first.
	if _, err := Parse([]byte(strings.Replace(fleetFile, "FLEET", "fleet: {replicas: 1, join: [{at: 3s, replicas: 1}], leave: [{at: 3s, replicas: 1}]}", 1)), "f.yaml"); err != nil {
		t.Errorf("join and leave at one instant: %v", err)
	}
}
