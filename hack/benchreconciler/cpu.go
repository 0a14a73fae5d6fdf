package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/<pid>/stat's CPU times (USER_HZ, 100 on
// every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// cpuByCommand sums the CPU time (user and system) of this process and of
// its children, the environment's kube-apiservers, etcd,
// kube-controller-managers and the server, by command name.
func cpuByCommand() map[string]time.Duration {
	self := os.Getpid()
	out := map[string]time.Duration{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // exited meanwhile
		}
		// The command is in parentheses and may hold spaces; the fields
		// after it start with the state.
		open, end := strings.IndexByte(string(b), '('), strings.LastIndexByte(string(b), ')')
		if open < 0 || end < open {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b[:open])))
		fields := strings.Fields(string(b[end+1:]))
		if len(fields) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		if pid != self && ppid != self {
			continue
		}
		utime, _ := strconv.ParseInt(fields[11], 10, 64)
		stime, _ := strconv.ParseInt(fields[12], 10, 64)
		command := string(b[open+1 : end])
		if pid == self {
			command = "benchmark (check-ins, loop, watches)"
		}
		out[command] += time.Duration(utime+stime) * clockTick
	}
	return out
}

// cpuUsed is the CPU time each command used between two cpuByCommand.
func cpuUsed(before, after map[string]time.Duration) map[string]time.Duration {
	used := map[string]time.Duration{}
	for command, t := range after {
		used[command] = t - before[command]
	}
	return used
}

// steadyCPU is what the machine's cores did in steady state.
type steadyCPU struct {
	used     map[string]time.Duration
	checkIns int64 // check-in patches answered meanwhile
}

// print adds the steady state's CPU to the figures' table: the share of one
// core each command took, and the members' cost of one check-in.
func (s steadyCPU) print(over time.Duration) {
	commands := make([]string, 0, len(s.used))
	for command := range s.used {
		commands = append(commands, command)
	}
	slices.Sort(commands)
	var parts []string
	var total time.Duration
	for _, command := range commands {
		total += s.used[command]
		parts = append(parts, fmt.Sprintf("%s %.0f%%", command, 100*s.used[command].Seconds()/over.Seconds()))
	}
	fmt.Printf("| CPU in steady state, share of one core (of %d) | %s; all %.0f%% | |\n", runtime.NumCPU(), strings.Join(parts, ", "), 100*total.Seconds()/over.Seconds())
	if s.checkIns > 0 {
		members := s.used["kube-apiserver"] + s.used["etcd"]
		fmt.Printf("| kube-apiservers' and etcd's CPU per check-in patch, their idle cost included (%d patches) | %s | |\n", s.checkIns, (members / time.Duration(s.checkIns)).Round(10*time.Microsecond))
	}
}
