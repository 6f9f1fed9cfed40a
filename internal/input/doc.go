// Package input reads what users type: sizes and rates (units) and spec files
// (specfile).
package input
