"""Subjects -> asv -> results -> rows: generating the suite, driving asv, reading its results, ingesting them."""
