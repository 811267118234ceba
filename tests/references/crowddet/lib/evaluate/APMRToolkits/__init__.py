# -*- coding:utf8 -*-
__author__ = 'jyn'
__email__ = 'jyn@megvii.com'

from .image import *
from .database import *
