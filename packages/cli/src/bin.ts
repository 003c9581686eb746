#!/usr/bin/env node
// The command's modules load the native addon when they are imported, so they are imported here
// dynamically: a failure at that point (no addon for this platform, an install script that was
// blocked, a package missing from the install) is reported as one line like any other error.
import { reportError } from './errors.js';

const argv = process.argv;
import('./main.js')
  .then(({ main }) => main(argv))
  .catch((e: unknown) => {
    process.exitCode = reportError(e, argv.includes('--verbose'));
  });
