"""The thin Spark layer: DataSource classes over the Spark-free catalog and codecs."""
