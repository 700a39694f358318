// Command pause is the process of a pod's sandbox container on the one-node
// cluster (scripts/node/): registry.k8s.io/pause cannot be pulled here, so the
// tooling commits this static binary as an image under that name. Like the
// original it holds the pod's namespaces, reaps the zombies of a shared PID
// namespace and exits on SIGINT or SIGTERM.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
