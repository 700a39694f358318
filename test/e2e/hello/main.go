// Command hello proves a Go toolchain fetched as a module builds programs.
package main

import (
	"fmt"
	"runtime"
)

func main() { fmt.Println("hello from", runtime.Version()) }
