package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

var profileFile *os.File

func startProfile(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	profileFile = f
	return nil
}

func stopProfile() {
	if profileFile != nil {
		pprof.StopCPUProfile()
		profileFile.Close()
		profileFile = nil
	}
}
