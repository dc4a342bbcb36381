/** The sandboxctl command line: one class per subcommand. */
package io.sandboxd.daemon.cli;
