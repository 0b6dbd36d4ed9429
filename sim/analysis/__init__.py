"""Reading runs and specs back for people: the doctor, decision replay and spec checks."""
