package benchenv

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/<pid>/stat's CPU times (USER_HZ, 100 on
// every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// CPUByCommand sums the CPU time (user and system) of this process, named
// self, and of its children (the environment's kube-apiservers, etcd,
// kube-controller-managers, the server, hollow members), by command name.
func CPUByCommand(self string) map[string]time.Duration {
	me := os.Getpid()
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
		if pid != me && ppid != me {
			continue
		}
		utime, _ := strconv.ParseInt(fields[11], 10, 64)
		stime, _ := strconv.ParseInt(fields[12], 10, 64)
		command := string(b[open+1 : end])
		if pid == me {
			command = self
		}
		out[command] += time.Duration(utime+stime) * clockTick
	}
	return out
}

// CPUUsed is the CPU time each command used between two CPUByCommand.
func CPUUsed(before, after map[string]time.Duration) map[string]time.Duration {
	used := map[string]time.Duration{}
	for command, t := range after {
		used[command] = t - before[command]
	}
	return used
}

// CPUShares says what share of one core each command took over a period,
// and all of them together.
func CPUShares(used map[string]time.Duration, over time.Duration) string {
	commands := make([]string, 0, len(used))
	for command := range used {
		commands = append(commands, command)
	}
	slices.Sort(commands)
	var parts []string
	var total time.Duration
	for _, command := range commands {
		total += used[command]
		parts = append(parts, fmt.Sprintf("%s %.0f%%", command, 100*used[command].Seconds()/over.Seconds()))
	}
	return fmt.Sprintf("%s; all %.0f%%", strings.Join(parts, ", "), 100*total.Seconds()/over.Seconds())
}
