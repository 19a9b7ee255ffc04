package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version describes the running binary: the module version (or "devel"
// for a local build), the commit it was built from when known, and the
// Go toolchain.
func Version() string {
	version, commit, dirty := "devel", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	out := "sluice " + version
	if commit != "" {
		if len(commit) > 12 {
			commit = commit[:12]
		}
		out += " (" + commit
		if dirty {
			out += ", modified"
		}
		out += ")"
	}
	return fmt.Sprintf("%s %s %s/%s", out, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
