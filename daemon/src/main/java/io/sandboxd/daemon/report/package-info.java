/**
 * `sandboxctl report`: verified records, their aggregates, and the static pages drawn from them.
 */
package io.sandboxd.daemon.report;
