package org.lancehost.trino;

import io.trino.spi.SplitWeight;
import io.trino.spi.connector.ConnectorSplit;

/**
 * One lance-host split: its bytes and the snapshot token of the version it was planned on (a
 * worker opens the snapshot from the token without reading the manifest, with the storage
 * options its own catalog describes; neither carries credentials).
 *
 * @param token the snapshot token
 * @param split the split's bytes
 * @param rows the rows the split holds (before the filter), for its weight
 */
public record LanceHostSplit(byte[] token, byte[] split, long rows) implements ConnectorSplit {
  @Override
  public SplitWeight getSplitWeight() {
    // a fragment of ~1M rows weighs one standard split
    return SplitWeight.fromProportion(Math.min(1.0, Math.max(0.01, rows / 1_000_000.0)));
  }

  @Override
  public long getRetainedSizeInBytes() {
    return 64L + token.length + split.length;
  }
}
