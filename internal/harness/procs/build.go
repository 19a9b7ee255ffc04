package procs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// Build builds the sluice command once, however many tests or phases ask
// for it: the first Path builds, the rest wait for and share its result.
type Build struct {
	// Out is where the binary goes; empty is a temp dir of its own,
	// which Remove deletes.
	Out string
	// Root is the module's root; empty is found above the working
	// directory (a test's is its package's directory).
	Root string

	once sync.Once
	path string
	tmp  string
	err  error
}

// Path builds the binary if no one has yet and returns where it is.
func (b *Build) Path(ctx context.Context) (string, error) {
	b.once.Do(func() { b.path, b.err = b.build(ctx) })
	return b.path, b.err
}

func (b *Build) build(ctx context.Context) (string, error) {
	root := b.Root
	if root == "" {
		var err error
		if root, err = ModuleRoot(); err != nil {
			return "", err
		}
	}
	out := b.Out
	if out == "" {
		dir, err := os.MkdirTemp("", "sluice-bin-")
		if err != nil {
			return "", err
		}
		b.tmp, out = dir, filepath.Join(dir, "sluice")
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/sluice")
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/sluice: %v\n%s", err, msg)
	}
	return out, nil
}

// Remove deletes the temp dir the binary was built into, if Build made
// one.
func (b *Build) Remove() {
	if b.tmp != "" {
		os.RemoveAll(b.tmp)
	}
}

// ModuleRoot walks up from the working directory to go.mod.
func ModuleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", errors.New("go.mod not found above the working directory")
		}
		d = parent
	}
}
