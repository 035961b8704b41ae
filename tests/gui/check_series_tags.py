#!/usr/bin/python3
# Reads the patient, study, series and temporal tags of the DICOM series in each folder given (pydicom) and
# the shape of each NIfTI file given (nibabel), and prints them as JSON for the GUI test of series exports:
#   {"FOLDER": [{"instance", "series_uid", "series_number", "study_uid", "patient_name", "patient_id",
#                "accession", "study_description", "series_description", "temporal_position",
#                "temporal_positions"}, ...] (InstanceNumber order), "FILE.nii": {"shape": [...]}}
# usage: check_series_tags.py PATH...; exit 3 when pydicom or nibabel is missing.
import json
import os
import sys

try:
    import nibabel
    import pydicom
except ImportError as e:
    print("missing: %s" % e, file=sys.stderr)
    sys.exit(3)


def tags(folder):
    out = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".dcm"):
            continue
        ds = pydicom.dcmread(os.path.join(folder, name), stop_before_pixels=True)
        out.append({
            "instance": int(ds.InstanceNumber),
            "series_uid": str(ds.SeriesInstanceUID),
            "series_number": int(ds.SeriesNumber),
            "study_uid": str(ds.StudyInstanceUID),
            "patient_name": str(ds.PatientName),
            "patient_id": str(ds.PatientID),
            "accession": str(ds.get("AccessionNumber", "")),
            "study_description": str(ds.get("StudyDescription", "")),
            "series_description": str(ds.SeriesDescription),
            "temporal_position": int(ds.get("TemporalPositionIdentifier", 0) or 0),
            "temporal_positions": int(ds.get("NumberOfTemporalPositions", 0) or 0),
        })
    out.sort(key=lambda f: f["instance"])
    return out


result = {}
for path in sys.argv[1:]:
    result[path] = tags(path) if os.path.isdir(path) else {"shape": list(nibabel.load(path).shape)}
print(json.dumps(result))
