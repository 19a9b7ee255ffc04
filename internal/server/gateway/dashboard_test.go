package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/dashboard"
)

// A serving host samples its metrics for the dashboard once a second and
// serves the page, behind admin.token_env's token when one is set, with
// the probes left open.
func TestHostServesDashboard(t *testing.T) {
	t.Setenv("SLUICE_T_ADMIN_TOKEN", "s3cret-token")
	hs := newHostStack(t, mock.Config{}, func(c *config.Config) { c.Admin.TokenEnv = "SLUICE_T_ADMIN_TOKEN" })
	get := func(path, token string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", hs.admin+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, _ := get("/readyz", ""); resp.StatusCode != 200 {
		t.Errorf("/readyz without the token: %d; probes stay open", resp.StatusCode)
	}
	if resp, _ := get("/dashboard/", ""); resp.StatusCode != 401 {
		t.Errorf("/dashboard/ without the token: %d", resp.StatusCode)
	}
	if resp, body := get("/dashboard/", "s3cret-token"); resp.StatusCode != 200 || !strings.Contains(body, "Sluice dashboard") {
		t.Errorf("/dashboard/ with the token: %d", resp.StatusCode)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := get("/dashboard/data.json", "s3cret-token")
		var snap dashboard.Snapshot
		if err := json.Unmarshal([]byte(body), &snap); err != nil {
			t.Fatalf("data.json: %v\n%s", err, body)
		}
		if len(snap.Samples) > 0 && len(snap.Samples[len(snap.Samples)-1].Providers) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sample with providers after 10 s: %s", body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
