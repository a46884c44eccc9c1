"""The listings of the catalog: create, publish, and what a listing gets in the app."""
