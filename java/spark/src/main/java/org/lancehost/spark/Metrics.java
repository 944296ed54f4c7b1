package org.lancehost.spark;

import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomSumMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.lancehost.IoStats;

/**
 * What the connector's scans report to Spark (the SQL tab of the UI, and a plan's metrics): rows
 * the library returned, storage reads (requests and bytes, as the library counts them), data-cache
 * hits, and the time tasks waited on the library. Summed over a scan's tasks. Spark makes the
 * driver-side objects by class name: each is a public class with a public no-argument constructor.
 */
public final class Metrics {
  private Metrics() {}

  public static final String ROWS = "lanceRows", BYTES = "lanceReadBytes", REQUESTS = "lanceReadRequests",
      CACHE_HITS = "lanceDataCacheHits", TIME = "lanceTimeMs";

  /** Rows returned by lance-host. */
  public static final class Rows extends CustomSumMetric {
    @Override
    public String name() {
      return ROWS;
    }

    @Override
    public String description() {
      return "rows from lance-host";
    }
  }

  /** Bytes the library read from storage. */
  public static final class ReadBytes extends CustomSumMetric {
    @Override
    public String name() {
      return BYTES;
    }

    @Override
    public String description() {
      return "bytes read by lance-host";
    }
  }

  /** Read requests the library sent to storage. */
  public static final class ReadRequests extends CustomSumMetric {
    @Override
    public String name() {
      return REQUESTS;
    }

    @Override
    public String description() {
      return "read requests of lance-host";
    }
  }

  /** Data-cache blocks found cached. */
  public static final class DataCacheHits extends CustomSumMetric {
    @Override
    public String name() {
      return CACHE_HITS;
    }

    @Override
    public String description() {
      return "data-cache hits of lance-host";
    }
  }

  /** Milliseconds tasks waited for the library's batches (reading, decoding, filtering). */
  public static final class TimeMs extends CustomSumMetric {
    @Override
    public String name() {
      return TIME;
    }

    @Override
    public String description() {
      return "time in lance-host (ms)";
    }
  }

  static CustomMetric[] supported() {
    return new CustomMetric[] {new Rows(), new ReadBytes(), new ReadRequests(), new DataCacheHits(), new TimeMs()};
  }

  /** One task's values. */
  static CustomTaskMetric[] values(long rows, IoStats io, long nanos) {
    return new CustomTaskMetric[] {value(ROWS, rows), value(BYTES, io.readBytes()), value(REQUESTS, io.readRequests()),
        value(CACHE_HITS, io.dataCacheHits()), value(TIME, nanos / 1_000_000)};
  }

  private static CustomTaskMetric value(String name, long v) {
    return new CustomTaskMetric() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public long value() {
        return v;
      }
    };
  }
}
