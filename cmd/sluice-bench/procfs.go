package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the kernel's USER_HZ, the unit of utime and stime in
// /proc/PID/stat, read from the auxiliary vector (AT_CLKTCK); 100 if absent.
var clockTicks = func() int64 {
	const atClkTck = 17
	b, err := os.ReadFile("/proc/self/auxv")
	if err == nil {
		for i := 0; i+16 <= len(b); i += 16 {
			key := binary.NativeEndian.Uint64(b[i:])
			if key == atClkTck {
				if v := int64(binary.NativeEndian.Uint64(b[i+8:])); v > 0 {
					return v
				}
			}
		}
	}
	return 100
}()

// cpuTime is a process's user plus system CPU time, all threads.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may contain spaces and parentheses: fields are
	// counted from the last ')'. utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime/stime", pid)
	}
	return time.Duration(ut+st) * time.Second / time.Duration(clockTicks), nil
}

// rssKiB is VmRSS from /proc/PID/status.
func rssKiB(pid int) (int64, error) { return statusKiB(pid, "VmRSS") }

// hwmKiB is VmHWM from /proc/PID/status: the process's peak RSS so far.
func hwmKiB(pid int) (int64, error) { return statusKiB(pid, "VmHWM") }

// statusKiB reads one "Key: N kB" line of /proc/PID/status.
func statusKiB(pid int, key string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				return strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, key)
}

// memAvailable is the machine's MemAvailable from /proc/meminfo, in bytes.
func memAvailable() (int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			if f := strings.Fields(v); len(f) > 0 {
				kib, err := strconv.ParseInt(f[0], 10, 64)
				return kib << 10, err
			}
		}
	}
	return 0, fmt.Errorf("/proc/meminfo: no MemAvailable")
}

// machine describes where the benchmark ran.
type machine struct {
	CPUs      int
	CPUModel  string
	Kernel    string
	MemTotal  string
	GoVersion string
	HAProxy   string
	Node      string
}

func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), CPUModel: "unknown"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if f := strings.Fields(v); len(f) > 0 {
					if kib, err := strconv.ParseInt(f[0], 10, 64); err == nil {
						m.MemTotal = fmt.Sprintf("%.1f GiB", float64(kib)/(1<<20))
					}
				}
			}
		}
	}
	if out, err := exec.Command("go", "version").Output(); err == nil {
		m.GoVersion = strings.TrimSpace(string(out))
	}
	return m
}

// firstLine runs a command and returns the first line of its output.
func firstLine(name string, args ...string) string {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil && len(out) == 0 {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

// systemBusy is the CPU time all of the machine's CPUs spent busy (user,
// nice, system, irq, softirq) since boot, from /proc/stat. Compared with
// the harness's own processes it shows how much other load shared the run.
func systemBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected format")
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system irq softirq
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %v", err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / time.Duration(clockTicks), nil
}
