package org.lancehost.trino;

import io.trino.spi.connector.ConnectorTransactionHandle;

/** Reads pin their snapshot in the table handle, so one transaction handle serves every query. */
public enum LanceHostTransactionHandle implements ConnectorTransactionHandle {
  /** The only transaction. */
  INSTANCE
}
