package config

import (
	"strings"
	"testing"
)

const spendBase = `
providers:
  - {name: p, kind: openai, base_url: "http://127.0.0.1:1/v1"}
models:
  - name: chat
    targets: [{provider: p, model: gpt-x}]
  - name: big
    targets: [{provider: p, model: gpt-big}]
    degrade: {to: chat}
keys:
  - name: a
    tenant: ads
    sha256: "` + "1111111111111111111111111111111111111111111111111111111111111111" + `"
    models: [chat]
`

func parseSpend(t *testing.T, extra string) (*Config, error) {
	t.Helper()
	return Parse([]byte(spendBase+extra), "sluice.yaml")
}

func TestSpendConfigParses(t *testing.T) {
	c, err := parseSpend(t, `    spend: {daily: 10, rolling: {window: 1h, limit: 2.5}, soft: 0.9}
teams:
  - name: ads
    spend: {monthly: 500}
spend: {time_zone: Europe/Paris}
state: {dir: /tmp/sluice-state}
prices: {gpt-x: {input: 1, output: 2}, gpt-big: {input: 3, output: 4}}
`)
	if err != nil {
		t.Fatal(err)
	}
	k := c.Keys[0]
	if *k.Spend.Daily != 10 || k.Spend.Rolling.Window.D().Hours() != 1 || *k.Spend.Rolling.Limit != 2.5 || k.Spend.Soft != 0.9 {
		t.Fatalf("key spend %+v", k.Spend)
	}
	if !c.HasSpend(&k) || *c.TeamSpend(&k).Monthly != 500 || c.Spend.Location().String() != "Europe/Paris" {
		t.Fatal("team or time zone not read")
	}
}

func TestSpendConfigErrors(t *testing.T) {
	for _, c := range []struct{ extra, field, says string }{
		{"    spend: {daily: 0}\nstate: {dir: /tmp/x}\nprices: {gpt-x: {input: 1, output: 1}}\n", "keys[0].spend.daily", "leave it out for no limit"},
		{"    spend: {monthly: -5}\nstate: {dir: /tmp/x}\nprices: {gpt-x: {input: 1, output: 1}}\n", "keys[0].spend.monthly", "disable the key"},
		{"    spend: {daily: 5}\nprices: {gpt-x: {input: 1, output: 1}}\n", "spend", "set store:"},
		{"    spend: {daily: 5}\nstate: {dir: /tmp/x}\n", "keys[0]", "gpt-x"},
		{"    spend: {daily: 5}\nstate: {dir: /tmp/x}\nprices: {gpt-x: {input: 1, output: 1}}\nspend: {time_zone: Mars/Olympus}\n", "spend.time_zone", "IANA"},
		{"teams: [{name: nobody, spend: {daily: 1}}]\nstate: {dir: /tmp/x}\n", "teams[0].name", "tenant"},
		{"    spend: {rolling: {window: 1h}}\nstate: {dir: /tmp/x}\nprices: {gpt-x: {input: 1, output: 1}}\n", "keys[0].spend.rolling.limit", "missing"},
		{"    spend: {daily: 1, soft: 2}\nstate: {dir: /tmp/x}\nprices: {gpt-x: {input: 1, output: 1}}\n", "keys[0].spend.soft", "between 0 and 1"},
	} {
		_, err := parseSpend(t, c.extra)
		if err == nil {
			t.Errorf("%q: accepted", c.extra)
			continue
		}
		found := false
		for _, e := range allErrors(t, err) {
			if e.Field == c.field && strings.Contains(e.Error(), c.says) {
				found = true
			}
		}
		if !found {
			t.Errorf("%q: want %s saying %q, got %v", c.extra, c.field, c.says, err)
		}
	}
}

// A key that may use every model reaches each one's targets, and what
// they degrade to: each needs a price.
func TestSpendNeedsEveryReachablePrice(t *testing.T) {
	_, err := Parse([]byte(strings.Replace(spendBase, "    models: [chat]\n", "", 1)+
		"    spend: {daily: 5}\nstore: redis://127.0.0.1:6379/0\nprices: {gpt-x: {input: 1, output: 1}}\n"), "sluice.yaml")
	if err == nil || !strings.Contains(err.Error(), "gpt-big") || !strings.Contains(err.Error(), "prices:") {
		t.Fatalf("want gpt-big named as missing a price, got %v", err)
	}
}

// A team's spend limit holds for keys made at run time in the team,
// which may reach any model: every upstream model needs a price, not
// only those the file's keys of the team reach.
func TestTeamSpendNeedsEveryPrice(t *testing.T) {
	_, err := parseSpend(t, `teams:
  - name: ads
    spend: {monthly: 500}
state: {dir: /tmp/sluice-state}
prices: {gpt-x: {input: 1, output: 2}}
`)
	if err == nil || !strings.Contains(err.Error(), "teams[0]") || !strings.Contains(err.Error(), "gpt-big has no price") {
		t.Fatalf("a team limit with gpt-big unpriced: %v; want an error naming teams[0] and gpt-big", err)
	}
}
