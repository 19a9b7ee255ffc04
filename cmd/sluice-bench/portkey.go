package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// portkeyPackage is the npm package of the optional Portkey target.
const portkeyPackage = "@portkey-ai/gateway"

// installPortkey makes sure the Portkey gateway is installed under dir
// (outside the repository) and returns the package directory and version.
// An existing install is reused, so --portkey-dir can cache it across runs.
func installPortkey(ctx context.Context, dir string) (pkgDir, version string, err error) {
	pkgDir = filepath.Join(dir, "node_modules", "@portkey-ai", "gateway")
	start := filepath.Join(pkgDir, "build", "start-server.js")
	if _, err := os.Stat(start); err != nil {
		if _, err := exec.LookPath("npm"); err != nil {
			return "", "", fmt.Errorf("npm not found: %w", err)
		}
		if _, err := exec.LookPath("node"); err != nil {
			return "", "", fmt.Errorf("node not found: %w", err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", "", err
		}
		log, err := os.Create(filepath.Join(dir, "npm-install.log"))
		if err != nil {
			return "", "", err
		}
		defer log.Close()
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--prefix", dir, portkeyPackage)
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = 5 * time.Second
		if err := cmd.Run(); err != nil {
			return "", "", fmt.Errorf("npm install %s failed (%v); see %s", portkeyPackage, err, log.Name())
		}
		if _, err := os.Stat(start); err != nil {
			return "", "", fmt.Errorf("npm install %s gave no build/start-server.js", portkeyPackage)
		}
	}
	var pj struct {
		Version string `json:"version"`
	}
	if b, err := os.ReadFile(filepath.Join(pkgDir, "package.json")); err == nil {
		json.Unmarshal(b, &pj)
	}
	return pkgDir, pj.Version, nil
}
