package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// A replay at --time-scale t is only a replay of the scenario if the
// gateway and the fake providers run at t too: a gateway at real time
// judges a four-times-faster replay with windows, waits and per-minute
// budgets four times too long, and nothing in the outcome table says
// so. checkTimeScale asks every process it can see for its factor
// before the run: the gateway through --metrics (sluice_time_scale), and
// any sluice mock, whether it is the target itself or a provider on
// this machine that the scenario's config points at (its /stats). A
// factor that differs stops the run with what to pass; a process whose
// factor cannot be read is a note when the run is time-scaled.

// statsTimeout bounds one read of a fake provider's /stats.
const statsTimeout = 2 * time.Second

// sameScale reports whether two time scales are the same factor.
func sameScale(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(a, b) }

// mockScale reads a sluice mock's time scale from root's /stats. isMock
// is false when root answers nothing like a mock's /stats (a gateway, a
// provider, nothing listening); known is false for a mock that reports
// no time scale (one built before --time-scale).
func mockScale(ctx context.Context, root string) (scale float64, isMock, known bool) {
	ctx, cancel := context.WithTimeout(ctx, statsTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, root+"/stats", nil)
	if err != nil {
		return 0, false, false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, false
	}
	defer resp.Body.Close()
	var st struct {
		InFlight  *int64   `json:"in_flight"`
		Total     *int64   `json:"total"`
		TimeScale *float64 `json:"time_scale"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&st) != nil ||
		st.InFlight == nil || st.Total == nil {
		return 0, false, false
	}
	if st.TimeScale == nil || !(*st.TimeScale > 0) {
		return 0, true, false
	}
	return *st.TimeScale, true, true
}

// loopbackRoot is a provider base URL's scheme and host when the host is
// this machine's (where a sluice mock for a scenario runs), so that no
// question is ever sent to a real provider.
func loopbackRoot(baseURL string) (string, bool) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "", false
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", false
	}
	return u.Scheme + "://" + u.Host, true
}

// checkTimeScale compares the run's time scale ts with the gateway's
// (gateway: its sluice_time_scale, 0 when it reports none; read only
// with --metrics) and with every sluice mock it can reach: the targets,
// and the scenario's providers on loopback. A differing factor is a
// *ConfigError that says what to pass; one that cannot be read is a
// note, when ts is not 1.
func checkTimeScale(ctx context.Context, f *scenario.File, o Options, ts, gateway float64, note func(string, ...any)) error {
	var bad []string
	if o.Metrics != "" {
		switch {
		case gateway == 0:
			if ts != 1 {
				note("the gateway at --metrics reports no sluice_time_scale (a build before --time-scale?), so whether it runs at %g is unchecked", ts)
			}
		case !sameScale(gateway, ts):
			bad = append(bad, fmt.Sprintf("the gateway runs at time scale %g (its sluice_time_scale) and this load at %g: restart it with sluice serve --time-scale %g, or run this load with --time-scale %g",
				gateway, ts, ts, gateway))
		}
	}
	bases, _ := targetURLs(o.Target) // newPlan checked them
	targetIsMock := false
	asked := map[string]bool{}
	ask := func(root, what string) bool {
		if asked[root] {
			return false
		}
		asked[root] = true
		scale, isMock, known := mockScale(ctx, root)
		switch {
		case !isMock:
		case !known:
			if ts != 1 {
				note("the fake provider at %s reports no time scale (a build before --time-scale?), so whether it runs at %g is unchecked", root, ts)
			}
		case !sameScale(scale, ts):
			bad = append(bad, fmt.Sprintf("the fake provider at %s%s runs at time scale %g (its /stats) and this load at %g: restart it with sluice mock --time-scale %g, or run this load with --time-scale %g",
				root, what, scale, ts, ts, scale))
		}
		return isMock
	}
	for _, b := range bases {
		if ask(b, "") {
			targetIsMock = true
		}
	}
	if f.Gateway != nil {
		for i, p := range f.Gateway.Providers {
			if root, ok := loopbackRoot(p.BaseURL); ok {
				ask(root, fmt.Sprintf(" (providers[%d] %s)", i, p.Name))
			}
			for j, r := range p.Replicas {
				if root, ok := loopbackRoot(r.BaseURL); ok {
					ask(root, fmt.Sprintf(" (providers[%d].replicas[%d] %s)", i, j, r.Name))
				}
			}
		}
	}
	if o.Metrics == "" && !targetIsMock && ts != 1 {
		note("--time-scale %g: without --metrics the gateway's own time scale is unchecked; give its admin URL (--metrics http://127.0.0.1:9090/metrics) so a gateway at another speed is refused, and run it with sluice serve --time-scale %g", ts, ts)
	}
	if len(bad) > 0 {
		return &ConfigError{errors.New(strings.Join(bad, "; ") + " (every process replaying one scenario needs the same --time-scale)")}
	}
	return nil
}
