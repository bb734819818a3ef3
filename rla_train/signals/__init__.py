"""The learning signals: pure reward and advantage maths, the samples built from it, and the metrics of a judge."""
